"""Linear regression, device-agnostic: the seed article's pattern, ``model = LinearRegression().to(device)`` and
``data.to(device)``, fitting ``y = 2x + 1`` plus noise.

    python examples/linear_regression.py [--device cpu|cuda] [--epochs N] [--max-steps N] [--resume PATH]

The data is drawn on the CPU with agnostic's seeded generator, so every device fits the same points.
"""

import _common  # first: makes agnostic importable from a checkout that isn't installed
import agnostic
from agnostic import nn, optim
from agnostic.utils.data import DataLoader, TensorDataset, random_split

NAME = "linear_regression"
TRUE_WEIGHT, TRUE_BIAS, NOISE = 2.0, 1.0, 0.1


class LinearRegression(nn.Module):
    """``y = w x + b``: one input, one output."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(1, 1)

    def forward(self, x):
        return self.linear(x)


def noisy_line(count, seed):
    """``count`` points of ``y = 2x + 1 + noise`` with x in [-1, 1), split 80/20 into training and held-out."""
    x = agnostic.rand(count, 1) * 2 - 1
    y = TRUE_WEIGHT * x + TRUE_BIAS + NOISE * agnostic.randn(count, 1)
    return random_split(TensorDataset(x, y), [0.8, 0.2], generator=agnostic.Generator().manual_seed(seed))


def evaluate(model, dataset, device):
    """Mean squared error and R^2 of the fit on ``dataset``."""
    x, y = next(iter(DataLoader(dataset, batch_size=len(dataset))))
    x, y = x.to(device), y.to(device)
    model.eval()
    with agnostic.no_grad():
        error = ((model(x) - y) ** 2).mean().item()
    return error, 1 - error / y.var(unbiased=False).item()


def main(argv=None):
    """Fit, report the held-out error and the learned line, and leave a checkpoint, a loss curve and metrics."""
    args = _common.parse_args(__doc__.splitlines()[0], epochs=20, batch_size=32, lr=0.1, argv=argv)
    device = _common.choose_device(args.device)
    agnostic.manual_seed(args.seed)
    train_set, held_out = noisy_line(1000, args.seed)
    model = LinearRegression().to(device)
    _common.describe_model(model)
    optimizer = optim.SGD(model.parameters(), lr=args.lr)
    progress = _common.train(NAME, model, optimizer, nn.MSELoss(), train_set, args, device)
    error, r_squared = evaluate(model, held_out, device)
    weight, bias = model.linear.weight.item(), model.linear.bias.item()
    print(f"held-out MSE: {error:.4f}, R^2: {r_squared:.4f} ({len(held_out)} points)")
    print(f"learned y = {weight:.3f} x + {bias:.3f} (true: y = {TRUE_WEIGHT:g} x + {TRUE_BIAS:g})")
    _common.write_metrics(NAME, args, device, progress, mse=error, r_squared=r_squared, weight=weight, bias=bias)


if __name__ == "__main__":
    main()
