"""What the examples share: the command line, the device choice, the digits data, a training loop with a progress
bar, a loss-curve plot, metrics, and checkpoints that resume on another device."""

import argparse
import json
import pathlib
import sys

try:
    import agnostic
except ImportError:  # run from a checkout that isn't installed
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import agnostic

import matplotlib

matplotlib.use("Agg")  # writes files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402
from tqdm import tqdm  # noqa: E402

from agnostic.utils.data import DataLoader, TensorDataset, random_split  # noqa: E402


# ----- command line and device ------------------------------------------------------------------------------------
def parse_args(description, *, epochs, batch_size, lr, argv=None):
    """The flags every example takes, with that example's defaults."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--device", help="cpu, cuda or cuda:N (default: CUDA when available, else CPU)")
    parser.add_argument("--epochs", type=int, default=epochs, help="train until this many epochs are done")
    parser.add_argument("--max-steps", type=int, help="stop this run after this many optimizer steps")
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--lr", type=float, default=lr, help="learning rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("outputs"),
                        help="folder for the checkpoint, the loss curve and the metrics")
    parser.add_argument("--resume", type=pathlib.Path, metavar="PATH",
                        help="continue from this checkpoint on --device, whichever device it was saved on")
    return parser.parse_args(argv)


def choose_device(name):
    """``name`` as a device, or CUDA when available and the CPU otherwise (the seed's pattern)."""
    if name is None:
        name = "cuda" if agnostic.cuda.is_available() else "cpu"
    device = agnostic.device(name)
    print(f"using {device} (CUDA available: {agnostic.cuda.is_available()})")
    return device


# ----- data ---------------------------------------------------------------------------------------------------
def digits(image_shape, seed):
    """scikit-learn's 8x8 digits (shipped inside the package, nothing downloaded): float32 pixels in [0, 1] of
    ``image_shape`` and int64 labels, split 80/20 into a training and a held-out set (CPU tensors)."""
    from sklearn.datasets import load_digits  # here, not at the top: it takes a second, and not every example needs it

    data = load_digits()
    images = agnostic.tensor(data.data / 16.0, dtype=agnostic.float32).reshape(-1, *image_shape)
    labels = agnostic.tensor(data.target)
    split = agnostic.Generator().manual_seed(seed)
    return random_split(TensorDataset(images, labels), [0.8, 0.2], generator=split)


def accuracy(model, dataset, device):
    """The fraction of ``dataset`` that ``model`` classifies right, and the number of samples."""
    model.eval()
    correct = 0
    with agnostic.no_grad():
        for inputs, labels in DataLoader(dataset, batch_size=512):
            predictions = model(inputs.to(device)).argmax(dim=1)
            correct += int((predictions == labels.to(device)).sum().item())
    return correct / len(dataset), len(dataset)


# ----- training ---------------------------------------------------------------------------------------------------
def train(name, model, optimizer, loss_fn, train_set, args, device):
    """Train ``model`` from the start or from ``--resume``, under a progress bar, until ``--epochs`` are done or
    ``--max-steps`` steps ran; then save the checkpoint and the loss curve. Returns the progress dict (``epoch``:
    epochs done, ``losses``: the loss of every step so far, resumed ones included)."""
    shuffle = agnostic.Generator().manual_seed(args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=shuffle)
    progress = {"epoch": 0, "losses": []}
    if args.resume is not None:
        progress = resume(args.resume, model, optimizer, shuffle, device)
    planned = max(args.epochs - progress["epoch"], 0) * len(loader)
    steps = 0
    with tqdm(total=planned if args.max_steps is None else min(planned, args.max_steps), unit="step") as bar:
        while progress["epoch"] < args.epochs and steps != args.max_steps:
            bar.set_description(f"epoch {progress['epoch'] + 1}/{args.epochs}")
            steps += train_epoch(model, optimizer, loss_fn, loader, device, progress["losses"], bar,
                                 None if args.max_steps is None else args.max_steps - steps)
            progress["epoch"] += 1  # an epoch cut short by --max-steps counts as done: a resumed run starts the next
    last = f", last loss {progress['losses'][-1]:.4f}" if progress["losses"] else ""
    print(f"trained {steps} steps on {device}; {progress['epoch']}/{args.epochs} epochs done{last}")
    args.out.mkdir(parents=True, exist_ok=True)
    save_checkpoint(args.out / f"{name}.pt", model, optimizer, shuffle, progress, device)
    plot_losses(progress, args.out / f"{name}_loss.png", f"{name} on {device}")
    return progress


def train_epoch(model, optimizer, loss_fn, loader, device, losses, bar, max_steps=None):
    """One pass over ``loader`` (at most ``max_steps`` steps), appending each step's loss; returns the steps."""
    model.train()
    steps = 0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        if not losses:
            tqdm.write(f"batches live on {inputs.device} (inputs) and {targets.device} (targets)")
        loss = loss_fn(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.4f}", refresh=False)
        bar.update()
        steps += 1
        if steps == max_steps:
            break
    return steps


def device_rng_state(device):
    """The state of ``device``'s default generator (what dropout draws from)."""
    return agnostic.cuda.get_rng_state(device) if device.type == "cuda" else agnostic.get_rng_state()


def set_device_rng_state(device, state):
    """Restore ``device``'s default generator; a state from any device continues the same stream, since
    agnostic's generators draw the same numbers on every device."""
    if device.type == "cuda":
        agnostic.cuda.set_rng_state(state, device)
    else:
        agnostic.set_rng_state(state)


def save_checkpoint(path, model, optimizer, shuffle, progress, device):
    """Model and optimizer state, progress, and the generators' states, so a resumed run goes on as this one
    would have."""
    agnostic.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": progress["epoch"],
          "losses": progress["losses"], "device": device, "shuffle_rng": shuffle.get_state(),
          "device_rng": device_rng_state(device)}, path)
    print(f"checkpoint: {path} (saved from {device})")


def resume(path, model, optimizer, shuffle, device):
    """Load a checkpoint's tensors straight onto ``device`` (map_location) into ``model`` and ``optimizer``, and
    restore the generators; returns the progress it records."""
    checkpoint = agnostic.load(path, map_location=device)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    shuffle.set_state(checkpoint["shuffle_rng"].cpu())  # generator states are CPU byte tensors
    set_device_rng_state(device, checkpoint["device_rng"].cpu())
    weights = checkpoint["model"][next(iter(checkpoint["model"]))]
    print(f"resumed from {path} at epoch {checkpoint['epoch']} (saved from {checkpoint['device']}); "
          f"its tensors now live on {weights.device}")
    return {"epoch": checkpoint["epoch"], "losses": list(checkpoint["losses"]), "resumed_at": len(checkpoint["losses"]),
            "saved_from": checkpoint["device"]}


# ----- outputs ----------------------------------------------------------------------------------------------------
def plot_losses(progress, path, title):
    """The training loss of every step as a PNG, with a dashed line where a resumed run took over."""
    losses = progress["losses"]
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.plot(range(1, len(losses) + 1), losses, linewidth=1)
    if "resumed_at" in progress:
        axes.axvline(progress["resumed_at"] + 0.5, color="gray", linestyle="--",
                     label=f"resumed (saved from {progress['saved_from']})")
        axes.legend()
    axes.set(xlabel="step", ylabel="training loss", title=title, yscale="log")
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    print(f"loss curve: {path}")


def write_metrics(name, args, device, progress, **results):
    """``NAME.json`` in the output folder: the device, every step's loss and the final results."""
    path = args.out / f"{name}.json"
    path.write_text(json.dumps({"device": str(device), "epoch": progress["epoch"], "losses": progress["losses"],
                                **results}, indent=1))
    print(f"metrics: {path}")


def describe_model(model):
    """Say how many parameters the model has and where they live."""
    devices = sorted({str(p.device) for p in model.parameters()})
    count = sum(p.numel() for p in model.parameters())
    print(f"model: {count:,} parameters on {', '.join(devices)}")
