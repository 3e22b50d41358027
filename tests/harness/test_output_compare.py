"""harness/compare.py: tolerance, NaN/Inf rules and diagnostics a model can act on."""

from __future__ import annotations

import torch

from harness.compare import compare_outputs, degenerate_reasons, relative_error

NAN, INF = float("nan"), float("inf")


def test_equal_passes_and_reports_errors():
    ref = torch.randn(10, 10)
    reasons, diag = compare_outputs(ref.clone(), ref, 1e-4, 1e-4)
    assert reasons == [] and diag["output"]["mismatch_count"] == 0


def test_mismatch_reports_count_fraction_and_worst_index():
    ref = torch.zeros(4, 5)
    out = ref.clone()
    out[2, 3] = 1.0
    out[0, 1] = 0.5
    reasons, diag = compare_outputs(out, ref, 1e-4, 1e-4)
    d = diag["output"]
    assert d["mismatch_count"] == 2 and d["mismatch_fraction"] == 2 / 20
    assert d["worst"][0]["index"] == [2, 3] and d["worst"][0]["output"] == 1.0
    assert "[2, 3]" in reasons[0] and "2 of 20" in reasons[0]


def test_nan_rules():
    ref = torch.tensor([1.0, NAN, 3.0])
    assert compare_outputs(torch.tensor([1.0, NAN, 3.0]), ref, 1e-4, 1e-4)[0] == []  # matching NaN ok
    reasons, diag = compare_outputs(torch.tensor([NAN, NAN, 3.0]), ref, 1e-4, 1e-4)  # NaN on finite ref
    assert reasons and diag["output"]["nan_where_ref_finite"] == 1
    # the NaN is said before the maxima, which measure the finite elements only (here 0: all else is exact)
    assert "1 NaN where the reference is finite (never written, or 0/0); among the finite, max abs err 0," \
        in reasons[0], reasons
    assert compare_outputs(torch.tensor([1.0, 2.0, 3.0]), ref, 1e-4, 1e-4)[0]  # finite where ref is NaN


def test_inf_must_match_sign():
    ref = torch.tensor([INF, -INF])
    assert compare_outputs(torch.tensor([INF, -INF]), ref, 1e-4, 1e-4)[0] == []
    assert compare_outputs(torch.tensor([INF, INF]), ref, 1e-4, 1e-4)[0]


def test_shape_dtype_and_subclass_fail():
    ref = torch.ones(3)
    assert "shape" in compare_outputs(torch.ones(4), ref, 1, 1)[0][0]
    assert "dtype" in compare_outputs(torch.ones(3, dtype=torch.float64), ref, 1, 1)[0][0]

    class Sub(torch.Tensor):
        pass

    assert "plain torch.Tensor" in compare_outputs(torch.ones(3).as_subclass(Sub), ref, 1, 1)[0][0]


def test_tuple_outputs():
    ref = (torch.ones(2), torch.zeros(2))
    assert compare_outputs((torch.ones(2), torch.zeros(2)), ref, 1e-4, 1e-4)[0] == []
    assert "2 output tensors" not in str(compare_outputs((torch.ones(2),), ref, 1e-4, 1e-4)[0])
    assert compare_outputs((torch.ones(2),), ref, 1e-4, 1e-4)[0]



def test_dict_outputs_compare_by_key_and_value():
    a, b = torch.randn(4), torch.randn(3)
    ref = {"logits": a, "aux": (b, b * 2)}
    assert compare_outputs({"logits": a.clone(), "aux": (b.clone(), b * 2)}, ref, 1e-5, 1e-5)[0] == []
    wrong = compare_outputs({"logits": a.clone(), "aux": (b.clone(), b * 3)}, ref, 1e-5, 1e-5)[0]
    assert len(wrong) == 1 and "output[2]" in wrong[0]
    renamed = compare_outputs({"scores": a.clone(), "aux": (b, b * 2)}, ref, 1e-5, 1e-5)[0]
    assert renamed and "keys" in renamed[0] and "logits" in renamed[0]
    reordered = compare_outputs({"aux": (b, b * 2), "logits": a.clone()}, ref, 1e-5, 1e-5)[0]
    assert reordered and "keys" in reordered[0]
    assert compare_outputs(a.clone(), {"logits": a}, 1e-5, 1e-5)[0]  # a bare tensor for a dict

def test_degenerate_reference_detected():
    assert degenerate_reasons(torch.randn(100) * 1e-6, 1e-4, 1e-4)  # zeros would pass
    assert degenerate_reasons(torch.full((100,), 3.0) + torch.randn(100) * 1e-6, 1e-4, 1e-4)
    assert degenerate_reasons(torch.randn(100), 1e-4, 1e-4) == []


def test_relative_error():
    ref = torch.randn(1000)
    assert relative_error(ref, ref) == 0.0
    assert abs(relative_error(torch.zeros(1000), ref) - 1.0) < 1e-9


def test_chunked_comparison_gives_the_same_answer(monkeypatch):
    # a 6 GB output is compared chunk by chunk (a few GB of float64 temporaries, not ten times the output):
    # counts, maxima, the worst elements and the degenerate-reference checks do not depend on the chunking
    from harness import compare

    torch.manual_seed(3)
    ref = torch.randn(40, 25) * 10
    out = ref + torch.randn(40, 25) * 1e-3
    ref[3, 4], out[3, 4], out[7, 1] = float("nan"), float("nan"), float("nan")
    ref[9, 9], out[9, 9] = float("inf"), float("-inf")
    whole = compare.compare_outputs(out, ref, 1e-4, 1e-4), compare.relative_error(out, ref)
    flat = torch.full((500,), 3.0) + torch.randn(500) * 1e-6
    degenerate = compare.degenerate_reasons(flat, 1e-4, 1e-4)
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", 97)  # 11 chunks, the last one short
    assert repr(compare.compare_outputs(out, ref, 1e-4, 1e-4)) == repr(whole[0])  # NaN-safe equality
    assert abs(compare.relative_error(out, ref) - whole[1]) < 1e-12 * whole[1]  # the sums' order only
    assert compare.degenerate_reasons(flat, 1e-4, 1e-4) == degenerate == [
        "a constant (mean) output passes the tolerance (reference is near constant)"]
    reasons, diag = whole[0]
    assert diag["output"]["mismatch_count"] > 2 and "NaN where the reference is finite" in reasons[0]
