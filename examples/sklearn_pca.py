"""scikit-learn on agnostic tensors through the Python Array API standard: PCA, LDA and Ridge fit on the CPU or a GPU
and agree with the same estimators on NumPy arrays.

    python examples/sklearn_pca.py [--device cuda]

Needs scikit-learn and array-api-compat (``pip install scikit-learn array-api-compat``).
"""

import argparse
import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # scikit-learn's dispatch needs SciPy's, which is read at import

import numpy  # noqa: E402
import sklearn  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402

import agnostic  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--device", default="cuda" if agnostic.cuda.is_available() else "cpu")
device = agnostic.device(parser.parse_args().device)

rng = numpy.random.default_rng(0)
features = rng.standard_normal((200, 6)) @ rng.standard_normal((6, 6))
classes = (features[:, 0] + 0.5 * rng.standard_normal(200) > 0).astype(numpy.int64)
targets = features @ numpy.arange(1.0, 7.0) + 0.1 * rng.standard_normal(200)

X, y_class, y_value = (agnostic.asarray(a, device=device) for a in (features, classes, targets))
print(f"fitting on {device} with {type(X).__module__}.{type(X).__name__} inputs")

with sklearn.config_context(array_api_dispatch=True):
    pca = PCA(n_components=3, svd_solver="full").fit(X)
    lda = LinearDiscriminantAnalysis().fit(X, y_class)
    ridge = Ridge(alpha=1.0, solver="svd").fit(X, y_value)
    predicted = lda.predict(X)

reference_pca = PCA(n_components=3, svd_solver="full").fit(features)
reference_lda = LinearDiscriminantAnalysis().fit(features, classes)
reference_ridge = Ridge(alpha=1.0, solver="svd").fit(features, targets)


def host(tensor):
    return tensor.cpu().numpy()


print("PCA explained variance ratio:", numpy.round(host(pca.explained_variance_ratio_), 4),
      f"(an agnostic {type(pca.explained_variance_ratio_).__name__} on {pca.explained_variance_ratio_.device})")
print("PCA components match NumPy's (up to sign):",
      numpy.allclose(numpy.abs(host(pca.components_)), numpy.abs(reference_pca.components_), atol=1e-8))
print("LDA training accuracy:", float((host(predicted) == classes).mean()),
      "| predictions match NumPy's:", bool((host(predicted) == reference_lda.predict(features)).all()))
print("Ridge coefficients:", numpy.round(host(ridge.coef_), 4),
      "| match NumPy's:", numpy.allclose(host(ridge.coef_), reference_ridge.coef_, atol=1e-8))
