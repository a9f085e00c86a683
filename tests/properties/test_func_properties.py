"""agnostic.func's vmap and jacrev on arbitrary shapes, batch dimensions and float dtypes: the same on every device
and equal to the NumPy loop or closed form they stand for."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from agnostic.func import jacrev, vmap
from _strategies import arrays, check_tensor, fewer_examples, on_all_devices, shapes

TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


@given(st.sampled_from(["float32", "float64"]), shapes(min_dims=1, max_dims=4, min_side=1), st.data())
@fewer_examples()
def test_vmap_of_a_reduction_is_the_reduction_of_each_slice(dtype, shape, data):
    x = data.draw(arrays(dtype, shape, -10, 10))
    in_dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    out_dim = data.draw(st.integers(-1, 0 if len(shape) == 1 else 1))
    outcome = on_all_devices(lambda x: vmap(lambda part: (part * part).sum(-1, keepdim=True) if part.ndim else
                                            part * part, in_dims=in_dim, out_dims=out_dim)(x), x)
    slices = [np.take(x, index, axis=in_dim) for index in range(x.shape[in_dim])]
    each = [(part * part).sum(-1, keepdims=True) if part.ndim else part * part for part in slices]
    check_tensor(outcome, np.stack(each, axis=out_dim), dtype, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@given(st.sampled_from(["float32", "float64"]), shapes(min_dims=0, max_dims=3, min_side=1, max_side=3), st.data())
@fewer_examples()
def test_jacrev_of_an_elementwise_function_is_diagonal(dtype, shape, data):
    x = data.draw(arrays(dtype, shape, -3, 3))
    outcome = on_all_devices(lambda x: jacrev(agnostic.sin)(x), x)
    size = int(np.prod(shape))
    expected = np.diag(np.cos(x).reshape(-1)).reshape(tuple(shape) * 2) if size else np.zeros(tuple(shape) * 2)
    check_tensor(outcome, expected.astype(dtype), dtype, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
