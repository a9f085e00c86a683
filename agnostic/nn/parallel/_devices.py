"""Reading the device arguments of the parallel wrappers: ints (CUDA indices), ``"cuda:1"`` strings, devices."""

from ..._device import Device
from ..._backend import resolve


def as_device(device):
    """An int is a CUDA index (PyTorch's convention), -1 the CPU; strings and devices are taken as they are."""
    if isinstance(device, int):
        device = Device("cpu") if device == -1 else Device("cuda", device)
    elif not isinstance(device, Device):
        device = Device(device)
    return resolve(device)


def as_devices(devices):
    return [as_device(device) for device in devices]
