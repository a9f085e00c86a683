"""The digits MLP trained with DistributedDataParallel, on any number of GPUs or CPU processes.

    python -m agnostic.distributed.run --nproc-per-node N examples/ddp_digits.py [--device cpu|cuda] [--epochs N]
    python examples/ddp_digits.py            # the same training in one process

Each of the N ranks reads its share of every global batch (``--batch-size`` samples, split by DistributedSampler:
rank r gets rows r, r + N, ...), DDP averages the gradients, so every rank makes the update one process makes on
the whole batch. Dropout draws its mask for the whole global batch (the same numbers on every rank, from the same
seed) and keeps this rank's rows, so the N-process run prints the accuracy the one-process run prints.
"""

import os

import _common  # first: makes agnostic importable from a checkout that isn't installed
import agnostic
import agnostic.distributed as dist
from agnostic import nn, optim
from agnostic.nn.parallel import DistributedDataParallel
from agnostic.utils.data import DataLoader
from agnostic.utils.data.distributed import DistributedSampler
from mlp_digits import MLP

NAME = "ddp_digits"


class GlobalBatchDropout(nn.Module):
    """Dropout whose mask is drawn for the global batch and sliced to this rank's rows (rank, rank + N, ...)."""

    def __init__(self, p, rank, world_size):
        super().__init__()
        self.p, self.rank, self.world_size = p, rank, world_size

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        keep = agnostic.rand(x.shape[0] * self.world_size, *x.shape[1:], device=x.device) >= self.p
        return x * keep[self.rank::self.world_size] / (1 - self.p)


def main(argv=None):
    """Train with DDP under the launcher (or as one process), and print the held-out accuracy on rank 0."""
    args = _common.parse_args(__doc__.splitlines()[0], epochs=30, batch_size=96, lr=0.05, argv=argv)
    rank, world_size = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if args.batch_size % world_size:
        raise SystemExit(f"--batch-size {args.batch_size} must be a multiple of the number of ranks ({world_size})")
    use_cuda = args.device != "cpu" and agnostic.cuda.is_available()
    device = agnostic.device("cuda", local_rank) if use_cuda else agnostic.device("cpu")
    if use_cuda:
        agnostic.cuda.set_device(device)
    dist.init_process_group("nccl" if use_cuda else "gloo", rank=rank, world_size=world_size)
    if rank == 0:
        print(f"{world_size} rank(s) on {'GPUs' if use_cuda else 'CPU processes'}; global batch {args.batch_size}")

    agnostic.manual_seed(args.seed)
    train_set, held_out = _common.digits((64,), args.seed)
    with device:
        model = MLP()
    model.layers[2] = GlobalBatchDropout(model.layers[2].p, rank, world_size)
    model = DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size // world_size, sampler=sampler, drop_last=True)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for inputs, targets in loader:
            loss = loss_fn(model(inputs.to(device)), targets.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        global_loss = loss.detach().clone()  # the last step's loss on the whole global batch
        dist.all_reduce(global_loss)
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs}: last loss {global_loss.item() / world_size:.4f}")

    correct, total = _common.accuracy(model.module, held_out, device)
    if rank == 0:
        print(f"held-out accuracy: {correct:.2%} ({total} images)")
        args.out.mkdir(parents=True, exist_ok=True)
        agnostic.save(model.module.state_dict(), args.out / f"{NAME}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
