"""A spec at shapes a user names: constants rewritten where they are defined, derived ones follow."""

from __future__ import annotations

import pytest

from agent_client.shipping.variants import ShapesError, parse_shapes, spec_at
from harness.spec import load_spec
from tests.agent_client.agent_helpers import REPO

PUBLISHED = REPO / "tests" / "published_specs" / "2_Conv2d_ReLU_BiasAdd.py"

OURS = '''
import torch
import torch.nn as nn

VARIANTS = [{"name": "odd", "kwargs": {"rows": 33}}]


class Model(nn.Module):
    def forward(self, x):
        return x.softmax(-1)


def get_variants():
    return []


def get_inputs(rows=8, cols=128):
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("text, expected", [
    ("batch_size=4", {"batch_size": 4}),
    ("batch_size=4, height=16", {"batch_size": 4, "height": 16}),
    ("bias_shape=(8, 1, 1),out_channels=8", {"bias_shape": (8, 1, 1), "out_channels": 8}),  # comma in a tuple
    ("", {}),
])
def test_parse_shapes(text, expected):
    assert parse_shapes(text) == expected


@pytest.mark.parametrize("text", ["batch_size", "4=batch_size", "height=sixteen"])
def test_parse_shapes_names_what_is_wrong(text):
    with pytest.raises(ShapesError, match="--shapes"):
        parse_shapes(text)


def _inputs_and_init(tmp_path, source):
    path = tmp_path / "variant.py"
    path.write_text(source)
    spec = load_spec(path)
    return [tuple(x.shape) for x in spec.module.get_inputs()], spec.module.get_init_inputs(), spec


def test_published_constants_tuple_targets_and_derived_values(tmp_path):
    source = spec_at(PUBLISHED.read_text(), {"batch_size": 5, "width": 20, "out_channels": 6})
    inputs, init, _ = _inputs_and_init(tmp_path, source)
    assert inputs == [(5, 3, 12, 20)]  # `height, width = 12, 12`: only width changed
    assert init == [3, 6, 3, (6, 1, 1)]  # bias_shape = (out_channels, 1, 1) follows


def test_our_keyword_defaults_and_variants_removed(tmp_path):
    source = spec_at(OURS, {"cols": 96})
    inputs, _, spec = _inputs_and_init(tmp_path, source)
    assert inputs == [(8, 96)]
    assert [v.name for v in spec.variants] == ["default"]  # the named shapes are the one variant judged
    assert "VARIANTS" not in source and "get_variants" not in source


def test_unknown_names_are_listed_with_the_names_the_spec_has():
    with pytest.raises(ShapesError) as err:
        spec_at(PUBLISHED.read_text(), {"batch": 4})
    assert "['batch']" in str(err.value) and "batch_size" in str(err.value) and "height" in str(err.value)
