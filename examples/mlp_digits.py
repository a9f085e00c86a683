"""A multilayer perceptron learns scikit-learn's handwritten digits on any device.

    python examples/mlp_digits.py [--device cpu|cuda] [--epochs N] [--max-steps N] [--resume PATH]

The model is built directly on the device (``with device:``) and batches are moved there with ``.to(device)``.
agnostic's generator draws the same numbers on every device, so a seeded run gets the same initial weights,
batches and dropout masks on the CPU and on CUDA, and the two runs agree.
"""

import _common  # first: makes agnostic importable from a checkout that isn't installed
import agnostic
from agnostic import nn, optim

NAME = "mlp_digits"


class MLP(nn.Module):
    """64 pixels -> 256 -> 128 -> 10 digit scores, with ReLU and a little dropout."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 10),
        )

    def forward(self, images):
        return self.layers(images)


def main(argv=None):
    """Train, report held-out accuracy, and leave a checkpoint, a loss curve and metrics in ``--out``."""
    args = _common.parse_args(__doc__.splitlines()[0], epochs=30, batch_size=64, lr=0.05, argv=argv)
    device = _common.choose_device(args.device)
    agnostic.manual_seed(args.seed)
    train_set, held_out = _common.digits((64,), args.seed)
    with device:  # parameters are created and initialized on the device, from the device's own generator
        model = MLP()
    _common.describe_model(model)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    progress = _common.train(NAME, model, optimizer, nn.CrossEntropyLoss(), train_set, args, device)
    correct, total = _common.accuracy(model, held_out, device)
    print(f"held-out accuracy: {correct:.2%} ({total} images)")
    _common.write_metrics(NAME, args, device, progress, accuracy=correct)


if __name__ == "__main__":
    main()
