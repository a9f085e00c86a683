"""A small convolutional network learns scikit-learn's 8x8 handwritten digits on any device.

    python examples/cnn_digits.py [--device cpu|cuda] [--epochs N] [--max-steps N] [--resume PATH]

Same pipeline as mlp_digits.py, with images kept as 1x8x8 and Adam instead of SGD; a checkpoint saved on one
device resumes on another (Adam's moments are loaded straight onto the new device).
"""

import _common  # first: makes agnostic importable from a checkout that isn't installed
import agnostic
from agnostic import nn, optim

NAME = "cnn_digits"


class CNN(nn.Module):
    """Two 3x3 convolutions with max pooling (8x8 -> 4x4 -> 2x2), then a linear classifier."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 2 * 2, 10))

    def forward(self, images):
        return self.classifier(self.features(images))


def main(argv=None):
    """Train, report held-out accuracy, and leave a checkpoint, a loss curve and metrics in ``--out``."""
    args = _common.parse_args(__doc__.splitlines()[0], epochs=20, batch_size=64, lr=3e-3, argv=argv)
    device = _common.choose_device(args.device)
    agnostic.manual_seed(args.seed)
    train_set, held_out = _common.digits((1, 8, 8), args.seed)
    model = CNN().to(device)
    _common.describe_model(model)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    progress = _common.train(NAME, model, optimizer, nn.CrossEntropyLoss(), train_set, args, device)
    correct, total = _common.accuracy(model, held_out, device)
    print(f"held-out accuracy: {correct:.2%} ({total} images)")
    _common.write_metrics(NAME, args, device, progress, accuracy=correct)


if __name__ == "__main__":
    main()
