"""Sparse tensors (COO, CSR, CSC): construction, conversions, arithmetic, products, softmax and gradients, checked
against dense NumPy computations and against PyTorch's sparse tensors, on every device."""

import copy
import pickle

import numpy as np
import pytest

import agnostic

# PyTorch's own notes on its sparse support (invariant checks off, CSR in beta) are not about agnostic.
pytestmark = pytest.mark.filterwarnings("ignore:Sparse:UserWarning")

INDICES = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) appears twice: an uncoalesced tensor
VALUES = [3.0, 4.0, 5.0, 1.0]
DENSE = np.array([[0.0, 0.0, 4.0], [4.0, 0.0, 5.0]])


def sparse(device, dtype=agnostic.float32, values=VALUES, **kwargs):
    return agnostic.sparse_coo_tensor(INDICES, values, (2, 3), dtype=dtype, device=device, **kwargs)


def host(tensor):
    return tensor.detach().cpu().numpy()


def torch_sparse(torch, dtype=None):
    return torch.sparse_coo_tensor(torch.tensor(INDICES), torch.tensor(VALUES, dtype=dtype), (2, 3))


# ----- what a sparse tensor is ------------------------------------------------------------------------------------
def test_a_coo_tensor_knows_its_layout_size_and_components(device):
    s = sparse(device)
    assert isinstance(s, agnostic.Tensor)
    assert s.layout is agnostic.sparse_coo and isinstance(s.layout, agnostic.layout)
    assert s.is_sparse and not s.is_sparse_csr
    assert s.shape == agnostic.Size([2, 3]) and s.size(1) == 3 and s.dim() == 2 and s.ndim == 2
    assert s.dtype is agnostic.float32 and s.device == device
    assert (s.sparse_dim(), s.dense_dim(), s._nnz()) == (2, 0, 4)
    assert not s.is_coalesced()
    assert host(s._indices()).tolist() == INDICES
    with pytest.raises(RuntimeError, match="coalesce"):
        s.indices()
    assert agnostic.zeros(2).layout is agnostic.strided and not agnostic.zeros(2).is_sparse


def test_to_dense_adds_up_repeated_indices(device):
    np.testing.assert_allclose(host(sparse(device).to_dense()), DENSE)


def test_coalesce_sorts_and_sums_duplicates(device):
    c = sparse(device).coalesce()
    assert c.is_coalesced()
    assert host(c.indices()).tolist() == [[0, 1, 1], [2, 0, 2]]
    np.testing.assert_allclose(host(c.values()), [4.0, 4.0, 5.0])
    assert c.coalesce() is c


def test_size_is_inferred_and_hybrid_values_keep_dense_dimensions(device):
    s = agnostic.sparse_coo_tensor([[0, 2]], agnostic.ones(2, 3, device=device))
    assert s.shape == (3, 3) and (s.sparse_dim(), s.dense_dim()) == (1, 1)
    expected = np.zeros((3, 3))
    expected[[0, 2]] = 1
    np.testing.assert_allclose(host(s.to_dense()), expected)


def test_construction_errors_name_the_problem(device):
    with pytest.raises(RuntimeError, match="same nnz"):
        agnostic.sparse_coo_tensor([[0, 1]], [1.0], (2,), device=device)
    with pytest.raises(RuntimeError, match="size is inconsistent"):
        agnostic.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (2,), device=device, check_invariants=True)
    with pytest.raises(RuntimeError, match="int64"):
        agnostic.sparse_coo_tensor(agnostic.tensor([[0.5]]), [1.0], (2,))


def test_dense_to_sparse_and_back(device):
    x = agnostic.tensor(DENSE, device=device)
    s = x.to_sparse()
    assert s.is_coalesced() and s._nnz() == 3
    assert host(s.indices()).tolist() == [[0, 1, 1], [2, 0, 2]]
    np.testing.assert_allclose(host(s.to_dense()), DENSE)
    hybrid = x.to_sparse(1)
    assert (hybrid.sparse_dim(), hybrid.dense_dim(), hybrid._nnz()) == (1, 1, 2)
    np.testing.assert_allclose(host(hybrid.to_dense()), DENSE)
    assert x.to_dense() is x


def test_csr_and_csc_round_trips(device):
    s = sparse(device)
    csr, csc = s.to_sparse_csr(), s.to_sparse_csc()
    assert csr.layout is agnostic.sparse_csr and csr.is_sparse_csr and not csr.is_sparse
    assert host(csr.crow_indices()).tolist() == [0, 1, 3] and host(csr.col_indices()).tolist() == [2, 0, 2]
    assert host(csc.ccol_indices()).tolist() == [0, 1, 1, 3] and host(csc.row_indices()).tolist() == [1, 0, 1]
    np.testing.assert_allclose(host(csc.values()), [4.0, 4.0, 5.0])
    for made in (csr, csc, csr.to_sparse_coo(), csc.to_sparse(), csr.to_sparse_csc(), csc.to_sparse_csr()):
        np.testing.assert_allclose(host(made.to_dense()), DENSE)
    built = agnostic.sparse_csr_tensor([0, 1, 3], [2, 0, 2], [4.0, 4.0, 5.0], (2, 3), device=device)
    np.testing.assert_allclose(host(built.to_dense()), DENSE)
    with pytest.raises(RuntimeError, match="sparse_coo"):
        csr.indices()


def test_repr_is_pytorchs(device):
    torch = pytest.importorskip("torch")
    s = sparse("cpu")
    expected = repr(torch_sparse(torch)).replace("torch.", "agnostic.")
    assert repr(s) == expected
    assert repr(s.double()) == repr(torch_sparse(torch).double()).replace("torch.", "agnostic.")
    expected_csr = repr(torch_sparse(torch).to_sparse_csr()).replace("torch.", "agnostic.")
    assert repr(s.to_sparse_csr()) == expected_csr
    empty = agnostic.sparse_coo_tensor(agnostic.zeros(2, 0, dtype=agnostic.int64), agnostic.zeros(0), (2, 3))
    torch_empty = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (2, 3))
    assert repr(empty) == repr(torch_empty).replace("torch.", "agnostic.")


def test_moves_copies_and_pickles_keep_the_entries(device):
    s = sparse(device)
    for made in (s.to("cpu"), s.cpu(), s.clone(), s.detach(), copy.deepcopy(s), pickle.loads(pickle.dumps(s)),
                 s.to(agnostic.float64), s.double()):
        assert made.layout is agnostic.sparse_coo
        np.testing.assert_allclose(host(made.to_dense()), DENSE)
    assert s.to(agnostic.float64).dtype is agnostic.float64
    assert s.to(device) is s


# ----- arithmetic ------------------------------------------------------------------------------------------------
def test_elementwise_arithmetic_matches_dense(device):
    s = sparse(device)
    d = agnostic.tensor(np.arange(6.0).reshape(2, 3), dtype=agnostic.float32, device=device)
    dense = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(host((s + s).to_dense()), 2 * DENSE)
    np.testing.assert_allclose(host(s.add(s, alpha=3).to_dense()), 4 * DENSE)
    np.testing.assert_allclose(host((s - s.coalesce()).to_dense()), 0 * DENSE)
    np.testing.assert_allclose(host((s * 2).to_dense()), 2 * DENSE)
    np.testing.assert_allclose(host((2 * s).to_dense()), 2 * DENSE)
    np.testing.assert_allclose(host((s / 2).to_dense()), DENSE / 2)
    np.testing.assert_allclose(host((-s).to_dense()), -DENSE)
    masked = s * d
    assert masked.layout is agnostic.sparse_coo
    np.testing.assert_allclose(host(masked.to_dense()), DENSE * dense)
    np.testing.assert_allclose(host((s * s).to_dense()), DENSE * DENSE)
    np.testing.assert_allclose(host(s + d), DENSE + dense)
    np.testing.assert_allclose(host(s.sqrt().to_dense()), np.sqrt(DENSE), rtol=1e-6)
    assert (s.coalesce() + s.coalesce()).is_coalesced() and not (s + s).is_coalesced()


def test_sums_and_transposes(device):
    s = sparse(device)
    assert s.sum().item() == pytest.approx(DENSE.sum())
    for dim in (0, 1, -1):
        summed = agnostic.sparse.sum(s, dim)
        assert summed.layout is agnostic.sparse_coo
        np.testing.assert_allclose(host(summed.to_dense()), DENSE.sum(dim))
    total = agnostic.sparse.sum(s, (0, 1))
    assert total.layout is agnostic.strided and total.item() == pytest.approx(DENSE.sum())
    np.testing.assert_allclose(host(s.t().to_dense()), DENSE.T)
    np.testing.assert_allclose(host(s.transpose(0, 1).to_dense()), DENSE.T)
    np.testing.assert_allclose(host(s.to_sparse_csr().t().to_dense()), DENSE.T)


def test_sparse_mask_takes_values_at_the_masks_indices(device):
    s = sparse(device)
    d = agnostic.tensor(np.arange(6.0).reshape(2, 3), dtype=agnostic.float32, device=device)
    masked = d.sparse_mask(s)
    assert host(masked.indices()).tolist() == [[0, 1, 1], [2, 0, 2]]
    np.testing.assert_allclose(host(masked.values()), [2.0, 3.0, 5.0])
    other = agnostic.sparse_coo_tensor([[1], [0]], [7.0], (2, 3), device=device)
    np.testing.assert_allclose(host(other.sparse_mask(s.coalesce()).values()), [0.0, 7.0, 0.0])


def test_resizing_in_place(device):
    s = sparse(device).coalesce()
    assert s.sparse_resize_((4, 5), 2, 0) is s and s.shape == (4, 5)
    np.testing.assert_allclose(host(s.to_dense())[:2, :3], DENSE)
    with pytest.raises(RuntimeError, match="largest index"):
        s.sparse_resize_((1, 5), 2, 0)
    s.sparse_resize_and_clear_((2, 2), 2, 0)
    assert s._nnz() == 0 and host(s.to_dense()).tolist() == [[0.0, 0.0], [0.0, 0.0]]


# ----- products ---------------------------------------------------------------------------------------------------
def test_products_with_a_sparse_left_operand(device):
    s = sparse(device)
    d = agnostic.tensor(np.arange(6.0).reshape(3, 2), dtype=agnostic.float32, device=device)
    expected = DENSE @ np.arange(6.0).reshape(3, 2)
    for product in (agnostic.sparse.mm(s, d), s @ d, s.mm(d), s.matmul(d), agnostic.spmm(s, d), agnostic.dsmm(s, d),
                    s.to_sparse_csr() @ d):
        assert product.layout is agnostic.strided
        np.testing.assert_allclose(host(product), expected)
    vector = agnostic.tensor([1.0, 2.0, 3.0], device=device)
    np.testing.assert_allclose(host(s @ vector), DENSE @ [1.0, 2.0, 3.0])
    bias = agnostic.ones(2, 2, device=device)
    np.testing.assert_allclose(host(agnostic.sparse.addmm(bias, s, d, beta=2, alpha=0.5)), 2 + 0.5 * expected)
    np.testing.assert_allclose(host(agnostic.smm(s, d).to_dense()), expected)
    hybrid = agnostic.hspmm(s, d)
    assert (hybrid.sparse_dim(), hybrid.dense_dim()) == (1, 1)
    np.testing.assert_allclose(host(hybrid.to_dense()), expected)
    c = s.coalesce()
    square = agnostic.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2), device=device)
    np.testing.assert_allclose(host(agnostic.sspaddmm(square, c, d, beta=3).to_dense()),
                               3 * np.array([[0, 1.0], [2.0, 0]]) + expected)
    np.testing.assert_allclose(host(agnostic.saddmm(square, c, d).to_dense()), [[0, 1.0], [2.0, 0]] + expected)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        agnostic.sparse.mm(s, agnostic.ones(2, 2, device=device))


def test_products_match_pytorch(device):
    torch = pytest.importorskip("torch")
    d = np.arange(6.0).reshape(3, 2)
    ours = agnostic.hspmm(sparse(device), agnostic.tensor(d, dtype=agnostic.float32, device=device))
    theirs = torch.hspmm(torch_sparse(torch).coalesce(), torch.tensor(d, dtype=torch.float32))
    assert host(ours.indices()).tolist() == theirs._indices().tolist()
    np.testing.assert_allclose(host(ours.values()), theirs._values().numpy())
    ours = agnostic.smm(sparse(device), agnostic.tensor(d, dtype=agnostic.float32, device=device))
    theirs = torch.smm(torch_sparse(torch), torch.tensor(d, dtype=torch.float32))
    assert host(ours._indices()).tolist() == theirs._indices().tolist()


def test_softmax_over_the_specified_entries_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    s = sparse(device, dtype=agnostic.float64)
    t = torch_sparse(torch, torch.float64)
    for dim in (0, 1):
        np.testing.assert_allclose(host(agnostic.sparse.softmax(s, dim).values()),
                                   torch.sparse.softmax(t, dim).coalesce().values().numpy())
        np.testing.assert_allclose(host(agnostic.sparse.log_softmax(s, dim).values()),
                                   torch.sparse.log_softmax(t, dim).coalesce().values().numpy())


def test_softmax_rows_sum_to_one_where_entries_exist(device):
    s = sparse(device, dtype=agnostic.float64)
    rows = host(agnostic.sparse.softmax(s, 1).to_dense()).sum(1)
    np.testing.assert_allclose(rows, [1.0, 1.0])


# ----- autograd ---------------------------------------------------------------------------------------------------
def test_gradients_reach_the_values_through_to_dense(device):
    values = agnostic.tensor(VALUES, dtype=agnostic.float64, device=device, requires_grad=True)
    s = agnostic.sparse_coo_tensor(INDICES, values, (2, 3))
    assert s.requires_grad
    weights = agnostic.tensor(np.arange(6.0).reshape(2, 3), dtype=agnostic.float64, device=device)
    (s.to_dense() * weights).sum().backward()
    np.testing.assert_allclose(host(values.grad), [2.0, 3.0, 5.0, 2.0])


def test_sparse_mm_gradients_match_pytorch(device):
    torch = pytest.importorskip("torch")
    d = np.arange(6.0).reshape(3, 2)
    s = sparse(device, dtype=agnostic.float64, requires_grad=True)
    dense = agnostic.tensor(d, dtype=agnostic.float64, device=device, requires_grad=True)
    (agnostic.sparse.mm(s, dense) ** 2).sum().backward()
    t = torch.sparse_coo_tensor(torch.tensor(INDICES), torch.tensor(VALUES, dtype=torch.float64), (2, 3),
                                requires_grad=True)
    t_dense = torch.tensor(d, requires_grad=True)
    (torch.sparse.mm(t, t_dense) ** 2).sum().backward()
    assert s.grad.layout is agnostic.sparse_coo and s.is_leaf
    np.testing.assert_allclose(host(s.grad.to_dense()), t.grad.to_dense().numpy())
    np.testing.assert_allclose(host(dense.grad), t_dense.grad.numpy())


def test_gradcheck_through_sparse_ops(device):
    values = agnostic.tensor(VALUES, dtype=agnostic.float64, device=device, requires_grad=True)
    dense = agnostic.tensor(np.linspace(-1, 1, 6).reshape(3, 2), dtype=agnostic.float64, device=device,
                            requires_grad=True)

    def product(v, d):
        return agnostic.sparse.mm(agnostic.sparse_coo_tensor(INDICES, v, (2, 3)), d)

    def softmax(v):
        return agnostic.sparse.softmax(agnostic.sparse_coo_tensor(INDICES, v, (2, 3)), 1).to_dense()

    def chain(v):
        s = agnostic.sparse_coo_tensor(INDICES, v, (2, 3))
        return (s.coalesce() * 2 + s).to_sparse_csr().to_dense().sum(0)

    assert agnostic.autograd.gradcheck(product, (values, dense))
    assert agnostic.autograd.gradcheck(softmax, (values,))
    assert agnostic.autograd.gradcheck(chain, (values,))
    x = agnostic.tensor(DENSE + 1, dtype=agnostic.float64, device=device, requires_grad=True)  # no zero to cross
    assert agnostic.autograd.gradcheck(lambda t: t.to_sparse().values() * 3, (x,))


# ----- refusals ---------------------------------------------------------------------------------------------------
def test_dense_ops_refuse_sparse_tensors_naming_the_op_and_the_fix(device):
    s = sparse(device)
    with pytest.raises(NotImplementedError, match=r"exp\(\).*to_dense"):
        agnostic.exp(s)
    with pytest.raises(NotImplementedError, match=r"exp\(\).*to_dense"):
        s.exp()
    with pytest.raises(NotImplementedError, match=r"softmax.*to_dense"):
        agnostic.nn.functional.softmax(s, 0)
    with pytest.raises(NotImplementedError, match="to_dense"):
        s.view(6)
    with pytest.raises(NotImplementedError, match="to_dense"):
        s.numpy()
    with pytest.raises(NotImplementedError, match="to_dense"):
        bool(s)
    with pytest.raises(RuntimeError, match="fill every element"):
        s + 1
    assert not hasattr(s, "__cuda_array_interface__")
    with pytest.raises(RuntimeError, match="sparse layout"):
        agnostic.ones(2).indices()


# ----- block layouts and sampled products ------------------------------------------------------------------------
BLOCKY = np.arange(16.0).reshape(4, 4) * (np.arange(16).reshape(4, 4) % 3 != 0)


@pytest.mark.parametrize("blocksize", [(2, 2), (1, 2), (4, 1)])
def test_block_layouts_round_trip_and_match_pytorch(device, blocksize):
    x = agnostic.tensor(BLOCKY, dtype=agnostic.float32, device=device)
    bsr, bsc = x.to_sparse_bsr(blocksize), x.to_sparse_bsc(blocksize)
    assert bsr.layout is agnostic.sparse_bsr and bsc.layout is agnostic.sparse_bsc
    assert tuple(bsr.values().shape[1:]) == blocksize
    for made in (bsr, bsc, bsr.to_sparse_coo(), bsc.to_sparse_csr(), x.to_sparse().to_sparse_bsc(blocksize),
                 bsr + bsr * 0, x.to_sparse(layout=agnostic.sparse_bsr, blocksize=blocksize)):
        np.testing.assert_array_equal(host(made.to_dense()), BLOCKY)
    np.testing.assert_allclose(host(bsr @ agnostic.ones(4, 2, device=device)), BLOCKY @ np.ones((4, 2)))
    built = agnostic.sparse_bsr_tensor(bsr.crow_indices(), bsr.col_indices(), bsr.values(), (4, 4))
    np.testing.assert_array_equal(host(built.to_dense()), BLOCKY)
    built = agnostic.sparse_bsc_tensor(bsc.ccol_indices(), bsc.row_indices(), bsc.values(), (4, 4))
    np.testing.assert_array_equal(host(built.to_dense()), BLOCKY)
    torch = pytest.importorskip("torch")
    theirs = torch.tensor(BLOCKY, dtype=torch.float32).to_sparse_bsr(blocksize)
    assert repr(bsr.cpu()) == repr(theirs).replace("torch.", "agnostic.")
    theirs = torch.tensor(BLOCKY, dtype=torch.float32).to_sparse_bsc(blocksize)
    assert repr(bsc.cpu()) == repr(theirs).replace("torch.", "agnostic.")


def test_block_layouts_need_a_dividing_blocksize(device):
    with pytest.raises(RuntimeError, match="divide"):
        agnostic.ones(4, 4, device=device).to_sparse_bsr((3, 3))
    with pytest.raises(RuntimeError, match="blocksize"):
        agnostic.ones(4, 4, device=device).to_sparse().to_sparse(layout=agnostic.sparse_bsr)


def test_sampled_addmm_matches_pytorch_and_its_gradients_check(device):
    mask = agnostic.tensor(DENSE, dtype=agnostic.float64, device=device).to_sparse_csr()
    a = agnostic.tensor(np.linspace(-1, 1, 8).reshape(2, 4), dtype=agnostic.float64, device=device,
                        requires_grad=True)
    b = agnostic.tensor(np.linspace(0, 2, 12).reshape(4, 3), dtype=agnostic.float64, device=device,
                        requires_grad=True)
    result = agnostic.sparse.sampled_addmm(mask, a, b, beta=2, alpha=0.5)
    assert result.layout is agnostic.sparse_csr
    expected = 2 * DENSE + 0.5 * (host(a) @ host(b)) * (DENSE != 0)
    np.testing.assert_allclose(host(result.to_dense()), expected)
    assert agnostic.autograd.gradcheck(lambda x, y: agnostic.sparse.sampled_addmm(mask, x, y).values(), (a, b))
    torch = pytest.importorskip("torch")
    theirs = torch.sparse.sampled_addmm(torch.tensor(DENSE).to_sparse_csr(), torch.tensor(host(a)),
                                        torch.tensor(host(b)), beta=2, alpha=0.5)
    np.testing.assert_allclose(host(result.values()), theirs.values().numpy())
