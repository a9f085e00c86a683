"""The optional C part: ReLU, its gradient and Adam's update on OpenBLAS's threads (agnostic/_host_kernels.c).
Without a C compiler the build skips it, and agnostic runs those passes in NumPy."""

from setuptools import Extension, setup

kernels = Extension("agnostic._host_kernels_c", ["agnostic/_host_kernels.c"], optional=True,
                    extra_compile_args=["-O3", "-ffp-contract=off", "-fno-math-errno"])
setup(ext_modules=[kernels])
