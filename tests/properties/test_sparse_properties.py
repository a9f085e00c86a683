"""Sparse tensors over random shapes and densities: dense -> sparse -> dense is the identity (COO of every sparse
dimension count, CSR, CSC, BSR and BSC with random block sizes), and coalescing random COO entries sorts the
indices, makes them unique and adds up repeats, on every device, as NumPy's accumulation."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import agnostic
from _strategies import DEVICES

DTYPES = ["float32", "float64", "int64"]


@st.composite
def mostly_zero(draw, min_dims=1, max_dims=3):
    """A NumPy array of a random shape with a random share of zeros."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=5))
    values = draw(hnp.arrays(dtype, shape, elements=st.integers(-5, 5)))
    keep = draw(hnp.arrays(np.bool_, shape))
    return np.where(keep, values, 0).astype(dtype)


@settings(max_examples=40, deadline=None)
@given(mostly_zero(), st.data())
def test_dense_to_sparse_to_dense_is_the_identity(array, data):
    sparse_dim = data.draw(st.integers(0, array.ndim), label="sparse_dim")
    for device in DEVICES:
        x = agnostic.tensor(array, device=device)
        s = x.to_sparse(sparse_dim)
        assert (s.sparse_dim(), s.dense_dim()) == (sparse_dim, array.ndim - sparse_dim)
        assert s.is_coalesced() and s.dtype == x.dtype
        back = s.to_dense()
        assert back.dtype == x.dtype and back.shape == x.shape
        np.testing.assert_array_equal(back.cpu().numpy(), array)
        if sparse_dim == array.ndim:
            assert s._nnz() == np.count_nonzero(array)


def divisors(size):
    return [d for d in range(1, size + 1) if size % d == 0] or [1]


@settings(max_examples=30, deadline=None)
@given(mostly_zero(min_dims=2, max_dims=2), st.data())
def test_compressed_layouts_round_trip(array, data):
    blocksize = tuple(data.draw(st.sampled_from(divisors(size)), label="block") for size in array.shape)
    for device in DEVICES:
        x = agnostic.tensor(array, device=device)
        for made in (x.to_sparse_csr(), x.to_sparse_csc(), x.to_sparse().to_sparse_csr().to_sparse_csc()):
            np.testing.assert_array_equal(made.to_dense().cpu().numpy(), array)
            assert made._nnz() == np.count_nonzero(array)
        for made in (x.to_sparse_bsr(blocksize), x.to_sparse_bsc(blocksize), x.to_sparse().to_sparse_bsr(blocksize)):
            np.testing.assert_array_equal(made.to_dense().cpu().numpy(), array)
            assert made.values().shape[1:] == blocksize


@st.composite
def coo_entries(draw):
    """(indices, values, size) of a random COO tensor, repeats allowed."""
    size = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    nnz = draw(st.integers(0, 12))
    indices = np.array([draw(st.lists(st.integers(0, bound - 1), min_size=nnz, max_size=nnz)) for bound in size],
                       dtype=np.int64).reshape(len(size), nnz)
    values = np.array(draw(st.lists(st.integers(-9, 9), min_size=nnz, max_size=nnz)), dtype=np.float64)
    return indices, values, tuple(size)


@settings(max_examples=40, deadline=None)
@given(coo_entries())
def test_coalesce_sorts_makes_unique_and_adds_up(entries):
    indices, values, size = entries
    expected = np.zeros(size)
    np.add.at(expected, tuple(indices), values)
    for device in DEVICES:
        s = agnostic.sparse_coo_tensor(indices, values, size, device=device)
        np.testing.assert_array_equal(s.to_dense().cpu().numpy(), expected)
        c = s.coalesce()
        linear = np.ravel_multi_index(tuple(c.indices().cpu().numpy()), size) if indices.shape[1] else np.array([])
        assert list(linear) == sorted(set(linear.tolist()))
        assert c._nnz() == len(set(np.ravel_multi_index(tuple(indices), size).tolist()))
        np.testing.assert_array_equal(c.to_dense().cpu().numpy(), expected)
