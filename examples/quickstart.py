"""Device-agnostic tensor code in the style of PyTorch's CUDA-semantics notes: the same lines run on CPU or GPU."""

import agnostic

device = agnostic.device("cuda" if agnostic.cuda.is_available() else "cpu")
print(f"CUDA available: {agnostic.cuda.is_available()} ({agnostic.cuda.device_count()} device(s)); using {device}")

x = agnostic.tensor([1.0, 2.0], device=device)
print("x lives on", x.device)                       # cuda:0 on a GPU machine, cpu otherwise

y = agnostic.tensor([1.0, 2.0]).to(device)            # moved from the CPU
z = x + y                                             # computed where x and y live
print("x + y =", z, "on", z.device)

w = agnostic.randn(4, 3, device=device)
with agnostic.device(device):                         # default device for factory functions
    v = agnostic.ones(3)
print("w @ v lives on", (w @ v).device, "with dtype", (w @ v).dtype)

back = z.cpu()                                        # .cpu() copies to host; .numpy() needs a CPU tensor
print("back on the host:", back.numpy(), "same object if already there:", back.cpu() is back)

if device.type == "cuda":
    try:
        x + agnostic.tensor([1.0, 2.0])               # mixing devices is an error, as in PyTorch
    except RuntimeError as error:
        print("mixing devices:", error)
print("int / int gives", (agnostic.tensor([3, 4]) / 2).dtype, "as in PyTorch")
