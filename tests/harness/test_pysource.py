"""harness.pysource: parses serialised, CPython 3.11's cross-thread AST counter error retried once."""

import ast
import threading

import pytest

from harness import pysource
from harness.pysource import parse_python

RACE = SystemError("AST constructor recursion depth mismatch (before=39, after=165)")


def test_parses_like_ast():
    tree = parse_python("def f(x):\n    return x + 1\n")
    assert ast.dump(tree) == ast.dump(ast.parse("def f(x):\n    return x + 1\n"))


def test_syntax_errors_pass_through():
    with pytest.raises(SyntaxError):
        parse_python("def f(:\n")


def test_the_thread_race_is_retried_once(monkeypatch):
    calls = []

    def flaky(source, filename="<unknown>"):
        calls.append(source)
        if len(calls) == 1:
            raise RACE
        return ast.Module(body=[], type_ignores=[])

    monkeypatch.setattr(pysource, "_ast_parse", flaky)
    assert isinstance(parse_python("x = 1"), ast.Module) and len(calls) == 2


def test_a_second_race_or_another_system_error_is_raised(monkeypatch):
    def always(source, filename="<unknown>"):
        raise RACE

    monkeypatch.setattr(pysource, "_ast_parse", always)
    with pytest.raises(SystemError, match="recursion depth mismatch"):
        parse_python("x = 1")

    calls = []

    def other(source, filename="<unknown>"):
        calls.append(1)
        raise SystemError("something else")

    monkeypatch.setattr(pysource, "_ast_parse", other)
    with pytest.raises(SystemError, match="something else"):
        parse_python("x = 1")
    assert calls == [1]


def test_parses_never_overlap(monkeypatch):
    inside, most = [0], [0]
    real = ast.parse
    gate = threading.Barrier(4)

    def counting(source, filename="<unknown>"):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        try:
            return real(source, filename=filename)
        finally:
            inside[0] -= 1

    monkeypatch.setattr(pysource, "_ast_parse", counting)
    source = "\n".join(f"def f{i}(x):\n    return [y * {i} for y in x if y]" for i in range(400))

    def work():
        gate.wait()
        for _ in range(20):
            parse_python(source)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
