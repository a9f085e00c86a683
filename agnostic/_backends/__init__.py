"""The device backends: what agnostic runs on each kind of device, beyond NumPy's and CuPy's own functions."""
