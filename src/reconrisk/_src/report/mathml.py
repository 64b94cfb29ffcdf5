r"""Plain-text formulas as presentation MathML: what the report page and the docs site show (drawing only).

The code writes every formula as plain text (``B_kappa(mu, nu) = inf_eps [e^eps kappa + delta(eps)]``), and the
JSON keeps that text. Browsers render MathML natively — no script, no font download, no network — so the page
stays one self-contained file. Two functions, no dependency:

* :func:`to_mathml` — one expression → ``<math>``: Greek names become letters (``kappa`` → κ, ``eps2`` → ε₂),
  ``x_y``/``x_{…}`` and ``x^y`` become ``<msub>``/``<msup>`` (``Phi^-1`` → Φ⁻¹, ``D^{-}`` → D⁻), ``x_hat``,
  ``x_tilde``, ``x_bar`` an accent (X̂, g̃, x̄), ``a/b`` between two operands an ``<mfrac>`` (the operands' outer
  parentheses dropped), ``sqrt(…)`` an ``<msqrt>``, ``sum`` ∑, ``nabla`` ∇, ``ell`` ℓ, ``<=`` ≤, ``||`` ‖,
  ``in`` ∈ (inside a script), ``\\{``/``\\}`` a shown brace (``{…}`` only groups), ``N'`` a prime (part of its
  operand: ``1/N'`` is a fraction), ``theta^*`` an asterisk (not the product dot);
* :func:`formula_html` — a formula column's mixed text (formulas, words, citations) → escaped HTML in which
  each run of mathematics is a ``<math>`` element (its plain text kept as ``alttext``) and the words stay text.

Everything taken from a string is escaped (:func:`html.escape`): no string becomes markup.
"""

from __future__ import annotations

import html
import re

GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "eps": "ε", "zeta": "ζ",
         "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π",
         "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
         "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω", "Sigma": "Σ"}
#: Other named symbols: letters (ℓ) and operators (∇, ∂, ∞) written by name.
SYMBOLS = {"ell": "<mi>ℓ</mi>", "nabla": "<mo>∇</mo>", "partial": "<mo>∂</mo>", "infty": "<mi>∞</mi>"}
#: ``x_hat``, ``x_tilde``, ``x_bar``: an accent over the letter, not a subscript.
ACCENTS = {"hat": "^", "tilde": "~", "bar": "¯"}
#: Operators written in ASCII → the symbol shown.
OPERATORS = {"<=": "≤", ">=": "≥", "!=": "≠", "->": "→", "||": "‖", "-": "−", "*": "·", "~": "∼", "in": "∈"}
#: Named functions and operators shown upright (multi-letter ``<mi>``), beside the Greek names.
FUNCTIONS = {"exp", "log", "ln", "inf", "sup", "max", "min", "sqrt", "sum"}
#: Names that are always mathematics (upright too).
NAMES = {"Bern", "TV", "MSE", "PSNR", "diam"}
_SPACED = {"exp", "log", "ln", "inf", "sup", "max", "min"}  # a thin space either side, as TeX's \log

_E = lambda s: html.escape(str(s), quote=True)  # noqa: E731
_MATH_TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|[A-Za-z]+\d*|<=|>=|!=|->|\|\||\\[{}]|[α-ωΑ-Ω]|\S)")
_WORD_DIGITS = re.compile(r"([A-Za-z]+?)(\d+)$")


class _Node:
    """One parsed item: its MathML, and for a bracketed group the MathML inside the brackets."""

    def __init__(self, xml: str, kind: str = "atom", inner: str | None = None, text: str = ""):
        self.xml, self.kind, self.inner, self.text = xml, kind, inner, text


def _mi(name: str) -> str:
    if name in GREEK:
        g = GREEK[name]
        return f"<mi mathvariant='normal'>{g}</mi>" if g.isupper() else f"<mi>{g}</mi>"
    if len(name) == 1 and "Α" <= name <= "Ω":
        return f"<mi mathvariant='normal'>{name}</mi>"
    return f"<mi>{_E(name)}</mi>"


class _Parser:
    def __init__(self, text: str):
        self.toks = _MATH_TOKEN.findall(text)
        self.i = 0

    def peek(self, k: int = 0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self):
        t = self.peek()
        self.i += 1
        return t

    def seq(self, close: str | None = None) -> list[_Node]:
        items: list[_Node] = []
        while self.peek() is not None and self.peek() != close:
            if self.peek() in ")]}" and close is None:  # an unmatched closing bracket: shown as it is
                items.append(_Node(f"<mo>{_E(self.take())}</mo>", "op", text="close"))
                continue
            items.append(self.item())
        return _fractions(items)

    def item(self) -> _Node:
        node = self.atom()
        while self.peek() == "'":  # a prime belongs to its letter: N' is one operand (1/N' a fraction)
            self.take()
            node = _Node(f"<mrow>{node.xml}<mo>′</mo></mrow>", text=node.text)
        sub = sup = None
        while self.peek() in ("_", "^"):
            which = self.take()
            script = self.script()
            if which == "_" and script.text in ACCENTS:
                node = _Node(f"<mover accent='true'>{node.xml}<mo>{ACCENTS[script.text]}</mo></mover>",
                             text=node.text)
                continue
            if which == "_" and sub is None:
                sub = script
            elif which == "^" and sup is None:
                sup = script
            else:  # a second script of the same kind: nest
                node = _Node(_scripted(node.xml, sub, sup), text=node.text)
                sub, sup = (script, None) if which == "_" else (None, script)
        if sub is not None or sup is not None:
            node = _Node(_scripted(node.xml, sub, sup), text=node.text)
        if node.text in _SPACED:
            node = _Node(f"<mspace width='0.17em'/>{node.xml}<mspace width='0.17em'/>")
        return node

    def script(self) -> _Node:
        t = self.peek()
        if t == "{":
            self.take()
            inner = self.seq("}")
            self.take()
            return _Node("<mrow>" + "".join(n.xml for n in inner) + "</mrow>")
        if t in ("*", "'"):  # theta^* (an optimum), a prime: shown as such, not as the product dot
            self.take()
            return _Node(f"<mo>{'∗' if t == '*' else '′'}</mo>")
        if t in ("-", "+") and self.peek(1) is not None:
            self.take()
            return _Node(f"<mrow><mo>{'−' if t == '-' else '+'}</mo>{self.atom().xml}</mrow>")
        return self.atom()

    def atom(self) -> _Node:
        t = self.take()
        if t is None:
            return _Node("<mrow/>")
        if t in "([" and len(t) == 1:
            close = ")" if t == "(" else "]"
            inner = self.seq(close)
            closed = self.take() == close
            body = "".join(n.xml for n in inner)
            return _Node(f"<mrow><mo>{t}</mo>{body}" + (f"<mo>{close}</mo>" if closed else "") + "</mrow>",
                         "group", inner=body)
        if t == "{":
            inner = self.seq("}")
            self.take()
            return _Node("<mrow>" + "".join(n.xml for n in inner) + "</mrow>")
        if t in ("\\{", "\\}"):  # a brace shown as such ({ … } alone groups without showing)
            return _Node(f"<mo>{t[1]}</mo>", "op", text=t)
        if re.fullmatch(r"\d+(?:\.\d+)?", t):
            return _Node(f"<mn>{t}</mn>", text=t)
        if re.fullmatch(r"[A-Za-z]+\d*", t):
            return self.word(t)
        if re.fullmatch(r"[α-ωΑ-Ω]", t):
            return _Node(_mi(t), text=t)
        return _Node(f"<mo>{_E(OPERATORS.get(t, t))}</mo>", "op", text=t)

    def word(self, t: str) -> _Node:
        if t == "sqrt" and self.peek() == "(":
            group = self.atom()
            return _Node(f"<msqrt>{group.inner}</msqrt>")
        if t == "sum":
            return _Node("<mo>∑</mo>", text=t)
        if t == "in":
            return _Node("<mo>∈</mo>", "op", text=t)
        if t in SYMBOLS:
            return _Node(SYMBOLS[t], text=t)
        m = _WORD_DIGITS.match(t)
        if m and (m.group(1) in GREEK or len(m.group(1)) == 1):
            return _Node(f"<msub>{_mi(m.group(1))}<mn>{m.group(2)}</mn></msub>", text=t)
        return _Node(_mi(t), text=t)


def _scripted(base: str, sub: _Node | None, sup: _Node | None) -> str:
    if sub is not None and sup is not None:
        return f"<msubsup>{base}{sub.xml}{sup.xml}</msubsup>"
    if sub is not None:
        return f"<msub>{base}{sub.xml}</msub>"
    return f"<msup>{base}{sup.xml}</msup>"


def _fractions(items: list[_Node]) -> list[_Node]:
    """``a / b`` between two operands → ``<mfrac>`` (a bracketed operand loses its brackets)."""
    out: list[_Node] = []
    i = 0
    while i < len(items):
        n = items[i]
        if n.kind == "op" and n.text == "/" and out and out[-1].kind != "op" and i + 1 < len(items) \
                and items[i + 1].kind != "op":
            num, den = out.pop(), items[i + 1]
            part = lambda x: x.inner if x.kind == "group" else x.xml  # noqa: E731
            out.append(_Node(f"<mfrac><mrow>{part(num)}</mrow><mrow>{part(den)}</mrow></mfrac>"))
            i += 2
            continue
        out.append(n)
        i += 1
    return out


def to_mathml(expr: str, *, display: bool = False) -> str:
    """One plain-text expression as a ``<math>`` element (its text kept as ``alttext``)."""
    body = "".join(n.xml for n in _Parser(str(expr)).seq())
    mode = "block" if display else "inline"
    return f"<math display='{mode}' alttext='{_E(' '.join(str(expr).split()))}'><mrow>{body}</mrow></math>"


# -- mixed text: words stay words, runs of mathematics become <math> ----------------------------------
_TOKEN = re.compile(r"(?P<code>[A-Za-z]+(?:_[A-Za-z]+){2,})|(?P<script>[_^]\{[^{}]*\})|(?P<word>[A-Za-z]+\d*)"
                    r"|(?P<num>\d+(?:\.\d+)?)|(?P<op><=|>=|!=|->|\|\||[-+*/=<>~^_·−≤≥∈√∑])|(?P<open>[(\[{])"
                    r"|(?P<close>[)\]}])|(?P<greek>[α-ωΑ-Ω])|(?P<space>[ \t\n]+|,)|(?P<other>.)", re.S)
#: Short words that are words, not variables.
_PROSE_SHORT = {"by", "on", "of", "at", "is", "to", "an", "or", "as", "be", "if", "no", "kl", "dB", "et", "al", "in",
                "so", "it", "we", "vs", "In", "On", "By", "At", "Su", "Is", "If", "No", "An", "Or", "As", "To", "Of"}
#: Words after which a number or a letter names a part of a paper (Prop. 3, App. H), not a variable.
_PARTS = {"Thm", "Eq", "Prop", "Cor", "App", "Alg", "Fig", "Sec", "Lemma", "Def", "Remark", "Table", "Rem", "Ex"}


def _classify(toks: list[tuple[str, str]]) -> list[str]:
    """'math', 'prose' or 'neutral' (joins a run of mathematics but does not make one) for each token."""
    out = []
    for i, (kind, t) in enumerate(toks):
        prev = toks[i - 1][1] if i else ""
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        before = [x for x in toks[:i] if x[0] != "space"]
        after_part = bool(before) and (before[-1][1] == "." or before[-1][1] in _PARTS)
        if kind in ("code", "other"):
            out.append("prose")
        elif kind == "greek" or kind == "script":
            out.append("math")
        elif kind == "num":
            out.append("prose" if after_part else "neutral")
        elif kind == "word":
            letters = re.match(r"[A-Za-z]+", t).group(0)
            call = prev == "(" and nxt == ")" and i >= 2 and toks[i - 2][0] in ("word", "greek")  # f(fpr)
            glued = nxt[:1] in ("(", "_", "^") or prev in ("_", "^") or call
            if (after_part and len(t) <= 2) or t in _PARTS:
                out.append("prose")
            elif letters in GREEK or letters in NAMES or glued:
                out.append("math")
            elif letters in FUNCTIONS:  # "log C" is mathematics, "natural log)" a word
                later = [x for x in toks[i + 1:] if x[0] != "space"]
                out.append("math" if later and later[0][0] in ("word", "greek", "num", "open") else "prose")
            elif len(t) == 1:
                later = [x for x in toks[i + 1:] if x[0] != "space"]
                article = t in "aA" and later and later[0][0] == "word" and len(later[0][1]) > 2 \
                    and later[0][1] not in FUNCTIONS and later[0][1] not in GREEK
                out.append("prose" if article else "math")
            elif len(t) == 2 and t not in _PROSE_SHORT:
                out.append("math")
            else:
                out.append("prose")
        else:  # operators, brackets, spaces and commas
            out.append("neutral")
    return out


def _split_unmatched(run: list[tuple[str, str, str]]) -> list[tuple[bool, list]]:
    """A run of (kind, text, class) cut at its unmatched brackets, returned as text: [(is_candidate, tokens)]."""
    stack, bad = [], set()
    pairs = {")": "(", "]": "[", "}": "{"}
    for j, (kind, t, _) in enumerate(run):
        if kind == "open":
            stack.append(j)
        elif kind == "close":
            if stack and run[stack[-1]][1] == pairs[t]:
                stack.pop()
            else:
                bad.add(j)
    bad.update(stack)
    out, cur = [], []
    for j, tok in enumerate(run):
        if j in bad:
            out += [(True, cur), (False, [tok])]
            cur = []
        else:
            cur.append(tok)
    out.append((True, cur))
    return out


def _is_math(run: list[tuple[str, str, str]]) -> bool:
    if any(c == "math" for _, _, c in run):
        return True
    # numbers and operators alone: mathematics only when no operator dangles at an end ("q = 1", not "= 0")
    return (any(k == "op" for k, _, _ in run) and any(k == "num" for k, _, _ in run)
            and run[0][0] != "op" and run[-1][0] != "op")


def _prose(text: str) -> str:
    s = _E(text)
    for a, b in (("&lt;=", "≤"), ("&gt;=", "≥"), ("-&gt;", "→")):
        s = s.replace(a, b)
    return s


def formula_html(text: str) -> str:
    """``text`` (a formula, a formula with words, or words) as escaped HTML whose mathematics is MathML."""
    toks = [(m.lastgroup, m.group(0)) for m in _TOKEN.finditer(str(text))]
    cls = _classify(toks)
    out: list[str] = []
    run: list[tuple[str, str, str]] = []

    def flush():
        for cand, part in _split_unmatched(run):
            lo, hi = 0, len(part)
            while lo < hi and part[lo][0] == "space":  # (spaces and commas)
                lo += 1
            while hi > lo and part[hi - 1][0] == "space":
                hi -= 1
            core = part[lo:hi]
            text = lambda ts: "".join(t for _, t, _ in ts)  # noqa: E731
            if cand and core and _is_math(core):
                out.append(_prose(text(part[:lo])) + to_mathml(text(core)) + _prose(text(part[hi:])))
            else:
                out.append(_prose(text(part)))
        run.clear()

    for (kind, t), c in zip(toks, cls):
        if c == "prose":
            flush()
            out.append(f"<code>{_E(t)}</code>" if kind == "code" else _prose(t))
        else:
            run.append((kind, t, c))
    flush()
    return "".join(out)
