"""``agnostic.backends.cpu``: what the host CPU offers."""

import functools


@functools.cache
def get_cpu_capability():
    """The widest vector instruction set of the CPU, as PyTorch names it: ``"AVX512"``, ``"AVX2"`` or
    ``"DEFAULT"`` (read from ``/proc/cpuinfo`` where there is one).

        >>> agnostic.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
        True
    """
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            features = next((line.split(":", 1)[1].split() for line in cpuinfo if line.startswith("flags")), [])
    except OSError:
        return "DEFAULT"
    if "avx512f" in features and "avx512bw" in features and "avx512vl" in features:
        return "AVX512"
    return "AVX2" if "avx2" in features else "DEFAULT"
