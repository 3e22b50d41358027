"""Index arithmetic for generated kernels: sums of `coeff * ((var // div) % mod)` terms over kernel variables.

Usage: x = Index.var("x", 4096); dims = delinearize(x, (32, 128)); flat = linearize(dims, (32, 128))
       assert flat == x        # a reshape and its inverse cancel; render(flat) -> "x"

Every tensor element a kernel touches is addressed by one Index per dimension. Views (reshape, permute,
expand, slice) transform those indices instead of moving data, so the simplifier must see through them:
linearising indices that were just delinearised gives back the variable, and a mod whose argument cannot
reach the modulus disappears. Two indices are equal exactly when their simplified forms are, which is how
the lowering decides that a consumer reads a reduction's result at the row the kernel just reduced.
Variables are non-negative and bounded (`bound` is exclusive; lanes past it are masked off and never
read), which is what licenses dropping a mod. An expression the rules cannot handle becomes an opaque
atom with no bound: always correct, never simplified further.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    coeff: int
    var: str  # a kernel variable ("x", "r", "m", "k") or an opaque Triton expression
    div: int = 1
    mod: int | None = None  # None: no modulus
    bound: int | None = None  # exclusive bound of var; None: unknown (opaque)

    def max_value(self) -> int | None:
        """Largest value of (var // div) % mod, or None when unbounded."""
        if self.mod is not None:
            top = self.mod - 1
            if self.bound is not None:
                top = min(top, (self.bound - 1) // self.div)
            return top
        if self.bound is None:
            return None
        return (self.bound - 1) // self.div

    def render(self) -> str:
        inner = self.var if self.div == 1 else f"({self.var} // {self.div})"
        if self.mod is not None:
            inner = f"({inner} % {self.mod})"
        return inner if self.coeff == 1 else f"{self.coeff} * {inner}"


@dataclass(frozen=True)
class Index:
    terms: tuple[Term, ...] = ()
    const: int = 0

    @staticmethod
    def var(name: str, bound: int | None) -> Index:
        return Index((Term(1, name, 1, None, bound),)).simplified()

    @staticmethod
    def of(value: int) -> Index:
        return Index((), int(value))

    @staticmethod
    def opaque(code: str) -> Index:
        return Index((Term(1, f"({code})"),))

    def is_const(self) -> bool:
        return not self.terms

    def max_value(self) -> int | None:
        total = self.const
        for t in self.terms:
            m = t.max_value()
            if m is None or t.coeff < 0:
                return None
            total += t.coeff * m
        return total

    def min_is_nonneg(self) -> bool:
        return self.const >= 0 and all(t.coeff >= 0 for t in self.terms)

    def __add__(self, other: Index | int) -> Index:
        if isinstance(other, int):
            return Index(self.terms, self.const + other)
        return Index(self.terms + other.terms, self.const + other.const).simplified()

    def __sub__(self, other: Index | int) -> Index:
        if isinstance(other, int):
            return Index(self.terms, self.const - other)
        return self + other * -1

    def __mul__(self, c: int) -> Index:
        if c == 0:
            return Index.of(0)
        return Index(tuple(Term(t.coeff * c, t.var, t.div, t.mod, t.bound) for t in self.terms),
                     self.const * c).simplified()

    def __floordiv__(self, d: int) -> Index:
        if d == 1:
            return self
        if self.is_const():
            return Index.of(self.const // d) if self.const >= 0 else self._opaque_op("//", d)
        if not self.min_is_nonneg():
            return self._opaque_op("//", d)
        # floor((d*A + B) / d) == A + floor(B / d) for B >= 0
        exact = [t for t in self.terms if t.coeff % d == 0]
        if exact or self.const >= d:
            head = Index(tuple(Term(t.coeff // d, t.var, t.div, t.mod, t.bound) for t in exact),
                         self.const // d)
            rest = Index(tuple(t for t in self.terms if t.coeff % d), self.const % d)
            return (head + (rest // d)).simplified()
        if len(self.terms) == 1 and self.const == 0 and self.terms[0].coeff == 1:
            t = self.terms[0]
            if t.mod is None:
                return Index((Term(1, t.var, t.div * d, None, t.bound),)).simplified()
            if t.mod % d == 0:
                return Index((Term(1, t.var, t.div * d, t.mod // d, t.bound),)).simplified()
        top = self.max_value()
        if top is not None and top < d:
            return Index.of(0)
        split = self._split(d)
        if split is not None:  # (c*A + B) // d == A // (d/c) when 0 <= B < c and c divides d
            c, multiple, _ = split
            return multiple // (d // c)
        return self._opaque_op("//", d)

    def _split(self, d: int) -> tuple[int, Index, Index] | None:
        """(c, A, B) with self == c*A + B, c | d, 0 <= B < c, for the largest such c > 1 among the coeffs."""
        if not self.min_is_nonneg():
            return None
        for c in sorted({abs(t.coeff) for t in self.terms} | ({self.const} if self.const > 0 else set()),
                        reverse=True):
            if c <= 1 or d % c:
                continue
            a_terms = tuple(Term(t.coeff // c, t.var, t.div, t.mod, t.bound) for t in self.terms if t.coeff % c == 0)
            rest = Index(tuple(t for t in self.terms if t.coeff % c), self.const % c)
            top = rest.max_value()
            if top is not None and top < c:
                return c, Index(a_terms, self.const // c).simplified(), rest
        return None

    def __mod__(self, m: int) -> Index:
        if self.is_const():
            return Index.of(self.const % m) if self.const >= 0 else self._opaque_op("%", m)
        if not self.min_is_nonneg():
            return self._opaque_op("%", m)
        kept = Index(tuple(t for t in self.terms if t.coeff % m != 0), self.const % m).simplified()
        top = kept.max_value()
        if top is not None and top < m:
            return kept
        if len(kept.terms) == 1 and kept.const == 0 and kept.terms[0].coeff == 1:
            t = kept.terms[0]
            if t.mod is None or t.mod % m == 0:
                return Index((Term(1, t.var, t.div, m, t.bound),)).simplified()
        split = kept._split(m)
        if split is not None:  # (c*A + B) % m == c*(A % (m/c)) + B when 0 <= B < c and c divides m
            c, multiple, rest = split
            return (multiple % (m // c)) * c + rest
        return kept._opaque_op("%", m)

    def _opaque_op(self, op: str, value: int) -> Index:
        return Index((Term(1, f"(({self.render()}) {op} {value})"),))

    def simplified(self) -> Index:
        terms: dict[tuple, int] = {}
        bounds: dict[tuple, int | None] = {}
        for t in self.terms:
            mod = t.mod
            if mod is not None and t.bound is not None and (t.bound - 1) // t.div < mod:
                mod = None  # the argument never reaches the modulus
            if mod == 1 or (t.bound is not None and (t.bound - 1) // t.div == 0):
                continue  # x % 1 == 0, and v // d == 0 when v < d
            key = (t.var, t.div, mod)
            terms[key] = terms.get(key, 0) + t.coeff
            bounds[key] = t.bound
        items = [Term(c, v, d, m, bounds[(v, d, m)]) for (v, d, m), c in terms.items() if c != 0]
        changed = True
        while changed:  # c*((v//d)%m) + c*m*((v//(d*m))%m2) == c*((v//d)%(m*m2))
            changed = False
            for i, a in enumerate(items):
                if a.mod is None:
                    continue
                for j, b in enumerate(items):
                    if i != j and b.var == a.var and b.div == a.div * a.mod and b.coeff == a.coeff * a.mod:
                        mod = None if b.mod is None else a.mod * b.mod
                        merged = Term(a.coeff, a.var, a.div, mod, a.bound)
                        if merged.mod is not None and merged.bound is not None \
                                and (merged.bound - 1) // merged.div < merged.mod:
                            merged = Term(a.coeff, a.var, a.div, None, a.bound)
                        items = [t for k, t in enumerate(items) if k not in (i, j)] + [merged]
                        changed = True
                        break
                if changed:
                    break
        items.sort(key=lambda t: (t.var, t.div))
        return Index(tuple(items), self.const)

    def render(self) -> str:
        parts = [t.render() for t in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts).replace("+ -", "- ")

    def uses(self, var: str) -> bool:
        return any(t.var == var or var in t.var for t in self.terms)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def delinearize(flat: Index, shape: tuple[int, ...]) -> list[Index]:
    """Per-dimension indices of a row-major flat index into `shape` (size-1 dims get 0)."""
    out = []
    for size, stride in zip(shape, contiguous_strides(shape)):
        out.append(Index.of(0) if size == 1 else (flat // stride) % size)
    return out


def linearize(idx: list[Index], shape: tuple[int, ...]) -> Index:
    flat = Index.of(0)
    for i, stride, size in zip(idx, contiguous_strides(shape), shape):
        if size != 1:
            flat = flat + i * stride
    return flat


def address(idx: list[Index], strides: tuple[int, ...], offset: int = 0) -> Index:
    flat = Index.of(offset)
    for i, stride in zip(idx, strides):
        if stride:
            flat = flat + i * stride
    return flat
