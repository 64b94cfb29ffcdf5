"""Log–log line charts written directly as SVG text: the report's two figures without matplotlib.

``reconrisk report`` draws two small charts (lines, a shaded band, markers, an error bar, a vertical line, a
legend) on log axes with ticks at the powers of the base. matplotlib's import and drawing took ~0.6 s of the
report's ~3 s; writing the few SVG elements directly takes milliseconds and gives the same picture: text
stays text (the reader's sans-serif font, selectable), the root has a viewBox and no fixed size (it scales
with its container), and nothing is fetched from outside the page.

Only what the report needs: :class:`LogChart` is one panel (data to pixels on log axes; values ≤ 0 or NaN
break a line, as matplotlib skips them), :func:`svg_document` puts panels on one canvas.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_DASH = {"-": None, "--": "6,3", ":": "1.5,3", "-.": "7,3,1.5,3"}
_FONT = "font-family='DejaVu Sans, sans-serif'"
_ROW = 17.0  # a legend row's height


def power_label(base: int, k: int) -> str:
    """``b^k`` as plain text: 10⁻⁶, 2¹⁰ (1 for b⁰)."""
    return "1" if k == 0 else f"{base}{str(k).translate(_SUPERSCRIPT)}"


def _num(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def log_limits(values: np.ndarray, base: int) -> tuple[float, float]:
    """Data range on a log axis with a 5 % margin of its (log) span each side, as matplotlib's autoscale."""
    v = values[np.isfinite(values) & (values > 0)]
    if v.size == 0:
        return 0.0, 1.0
    lo, hi = math.log(float(v.min()), base), math.log(float(v.max()), base)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    pad = 0.05 * (hi - lo)
    return lo - pad, hi + pad


class LogChart:
    """One panel at ``box`` = (left, top, width, height) pixels of the canvas, both axes logarithmic."""

    def __init__(self, box: tuple[float, float, float, float], *, xbase: int = 10, ybase: int = 10) -> None:
        self.box, self.xbase, self.ybase = box, xbase, ybase
        self._items: list[tuple] = []  # (kind, data, style) in drawing order
        self.title = self.xlabel = self.ylabel = ""
        self.legend_at: str | None = None  # "upper right", "lower right" (inside the axes) or "below" (outside)
        self.empty_note: str | None = None  # what an empty panel says instead of its axes (lines split by "\n")
        self.show_xticklabels = True
        self.xlim: tuple[float, float] | None = None  # (log_base values); None: from the data

    # -- what to draw --------------------------------------------------------------------------
    def line(self, x, y, *, color: str, width: float = 1.2, dash: str = "-", marker: str | None = None,
             label: str | None = None) -> None:
        self._items.append(("line", (np.asarray(x, float), np.asarray(y, float)),
                            dict(color=color, width=width, dash=dash, marker=marker, label=label)))

    def band(self, x, lo, hi, *, color: str, opacity: float, label: str | None = None) -> None:
        self._items.append(("band", (np.asarray(x, float), np.asarray(lo, float), np.asarray(hi, float)),
                            dict(color=color, opacity=opacity, label=label)))

    def errorbar(self, x: float, y: float, low: float, high: float, *, color: str, label: str | None = None) -> None:
        self._items.append(("errorbar", (np.array([x], float), np.array([y, low, high], float)),
                            dict(color=color, marker="D", label=label)))

    def vline(self, x: float, *, color: str, label: str | None = None) -> None:
        self._items.append(("vline", (np.array([x], float),), dict(color=color, label=label)))

    # -- layout --------------------------------------------------------------------------------
    def _limits(self) -> tuple[tuple[float, float], tuple[float, float]]:
        xs, ys = [], []
        for kind, data, _ in self._items:
            xs.append(data[0])
            if kind != "vline":
                ys.extend(data[1:])
        xl = self.xlim or log_limits(np.concatenate(xs), self.xbase)
        yl = log_limits(np.concatenate(ys) if ys else np.array([1.0]), self.ybase)
        return xl, yl

    def _mapper(self):
        (x0, x1), (y0, y1) = self._limits()
        left, top, w, h = self.box

        def px(x):
            with np.errstate(divide="ignore", invalid="ignore"):
                lx = np.log(np.where(x > 0, x, np.nan)) / math.log(self.xbase)
            return left + (lx - x0) / (x1 - x0) * w

        def py(y):
            with np.errstate(divide="ignore", invalid="ignore"):
                ly = np.log(np.where(y > 0, y, np.nan)) / math.log(self.ybase)
            return top + h - (ly - y0) / (y1 - y0) * h

        return px, py, (x0, x1), (y0, y1)

    def has_data(self) -> bool:
        """Whether any item has a point a log axis can show (x and y finite and positive)."""
        for kind, data, _ in self._items:
            if kind == "vline":
                continue
            x, ys = data[0], np.concatenate([np.ravel(d) for d in data[1:]])
            if kind == "errorbar" or x.size != ys.size:
                ok = np.isfinite(x) & (x > 0)
                if ok.any() and (np.isfinite(ys) & (ys > 0)).any():
                    return True
                continue
            if (np.isfinite(x) & (x > 0) & np.isfinite(ys) & (ys > 0)).any():
                return True
        return False

    def render(self, uid: str) -> str:
        """The panel's SVG elements; ``uid`` names its clip path (unique on the page, deterministic). A panel
        with no point to show says so in words (``empty_note``) instead of drawing empty axes."""
        if not self.has_data():
            left, top, w, h = self.box
            lines = (self.empty_note or "nothing to show: no value here can be drawn on a log axis").split("\n")
            y0 = top + h / 2 - 9 * (len(lines) - 1)
            spans = "".join(f"<tspan x='{_num(left + w / 2)}' y='{_num(y0 + 18 * i)}'>{escape(t)}</tspan>"
                            for i, t in enumerate(lines))
            return (f"<g class='panel empty'><text class='empty-note' text-anchor='middle' font-size='13' fill='#555' "
                    f"{_FONT}>{spans}</text></g>")
        px, py, (x0, x1), (y0, y1) = self._mapper()
        left, top, w, h = self.box
        out = [f"<g class='panel'><clipPath id='{uid}'><rect x='{_num(left)}' y='{_num(top)}' "
               f"width='{_num(w)}' height='{_num(h)}'/></clipPath>"]
        out += self._grid_and_ticks((x0, x1), (y0, y1))
        out.append(f"<g clip-path='url(#{uid})'>")
        for kind, data, st in self._items:
            out.append(self._draw(kind, data, st, px, py))
        out.append("</g>")
        out.append(f"<rect x='{_num(left)}' y='{_num(top)}' width='{_num(w)}' height='{_num(h)}' fill='none' "
                   "stroke='#000' stroke-width='0.8'/>")
        if self.title:
            out.append(f"<text x='{_num(left + w / 2)}' y='{_num(top - 8)}' text-anchor='middle' font-size='13' "
                       f"{_FONT}>{escape(self.title)}</text>")
        if self.xlabel:
            out.append(f"<text x='{_num(left + w / 2)}' y='{_num(top + h + 38)}' text-anchor='middle' "
                       f"font-size='13' {_FONT}>{escape(self.xlabel)}</text>")
        if self.ylabel:
            cx, cy = left - 52, top + h / 2
            out.append(f"<text x='{_num(cx)}' y='{_num(cy)}' text-anchor='middle' font-size='13' "
                       f"transform='rotate(-90 {_num(cx)} {_num(cy)})' {_FONT}>{escape(self.ylabel)}</text>")
        if self.legend_at in ("upper right", "lower right"):  # ("below": svg_document draws it under the panels)
            out.append(self._legend())
        out.append("</g>")
        return "".join(out)

    def _grid_and_ticks(self, xl, yl) -> list[str]:
        left, top, w, h = self.box
        out = []
        for k in range(math.ceil(xl[0] - 1e-9), math.floor(xl[1] + 1e-9) + 1):
            x = left + (k - xl[0]) / (xl[1] - xl[0]) * w
            out.append(f"<line x1='{_num(x)}' y1='{_num(top)}' x2='{_num(x)}' y2='{_num(top + h)}' "
                       "stroke='#b0b0b0' stroke-opacity='0.6' stroke-width='0.8'/>"
                       f"<line x1='{_num(x)}' y1='{_num(top + h)}' x2='{_num(x)}' y2='{_num(top + h + 4)}' "
                       "stroke='#000' stroke-width='0.8'/>")
            if self.show_xticklabels:
                out.append(f"<text x='{_num(x)}' y='{_num(top + h + 18)}' text-anchor='middle' font-size='11' "
                           f"{_FONT}>{power_label(self.xbase, k)}</text>")
        for k in range(math.ceil(yl[0] - 1e-9), math.floor(yl[1] + 1e-9) + 1):
            y = top + h - (k - yl[0]) / (yl[1] - yl[0]) * h
            out.append(f"<line x1='{_num(left)}' y1='{_num(y)}' x2='{_num(left + w)}' y2='{_num(y)}' "
                       "stroke='#b0b0b0' stroke-opacity='0.6' stroke-width='0.8'/>"
                       f"<line x1='{_num(left - 4)}' y1='{_num(y)}' x2='{_num(left)}' y2='{_num(y)}' "
                       "stroke='#000' stroke-width='0.8'/>"
                       f"<text x='{_num(left - 7)}' y='{_num(y + 4)}' text-anchor='end' font-size='11' "
                       f"{_FONT}>{power_label(self.ybase, k)}</text>")
        return out

    @staticmethod
    def _runs(xp: np.ndarray, yp: np.ndarray) -> list[np.ndarray]:
        """Index runs where both coordinates are finite (a line breaks at values a log axis cannot show)."""
        ok = np.isfinite(xp) & np.isfinite(yp)
        idx = np.flatnonzero(ok)
        if idx.size == 0:
            return []
        return np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)

    def _draw(self, kind: str, data, st: dict, px, py) -> str:
        color = st["color"]
        if kind == "vline":
            x = float(px(data[0])[0])
            _, top, _, h = self.box
            return (f"<line x1='{_num(x)}' y1='{_num(top)}' x2='{_num(x)}' y2='{_num(top + h)}' stroke='{color}' "
                    "stroke-width='1' stroke-opacity='0.6'/>")
        if kind == "band":
            x, lo, hi = data
            xp, lp, hp = px(x), py(lo), py(hi)
            parts = []
            for run in self._runs(xp, lp + hp):
                pts = [f"{_num(a)},{_num(b)}" for a, b in zip(xp[run], hp[run])]
                pts += [f"{_num(a)},{_num(b)}" for a, b in zip(xp[run][::-1], lp[run][::-1])]
                parts.append(f"<polygon points='{' '.join(pts)}' fill='{color}' fill-opacity='{st['opacity']}'/>")
            return "".join(parts)
        if kind == "errorbar":
            xp = float(px(data[0])[0])
            yy = py(data[1])
            return (f"<line x1='{_num(xp)}' y1='{_num(yy[1])}' x2='{_num(xp)}' y2='{_num(yy[2])}' stroke='{color}' "
                    f"stroke-width='1.2'/>{_marker('D', xp, float(yy[0]), color)}")
        x, y = data
        xp, yp = px(x), py(y)
        dash = _DASH[st["dash"]]
        style = f"fill='none' stroke='{color}' stroke-width='{st['width']}'" + \
            (f" stroke-dasharray='{dash}'" if dash else "")
        parts = [f"<polyline points='{' '.join(f'{_num(a)},{_num(b)}' for a, b in zip(xp[r], yp[r]))}' {style}/>"
                 for r in self._runs(xp, yp)]
        if st["marker"]:
            ok = np.isfinite(xp) & np.isfinite(yp)
            parts += [_marker(st["marker"], float(a), float(b), color) for a, b in zip(xp[ok], yp[ok])]
        return "".join(parts)

    def _legend_entries(self) -> list[tuple[str, dict]]:
        return [(kind, st) for kind, _, st in self._items if st.get("label")]

    def legend_size(self, ncol: int = 1) -> tuple[float, float, float]:
        """(column width, width, height) of the legend in ``ncol`` columns."""
        entries = self._legend_entries()
        col = 34 + 6.3 * max((len(st["label"]) for _, st in entries), default=0)
        rows = math.ceil(len(entries) / ncol)
        return col, col * ncol, _ROW * rows + 8

    def legend(self, x: float, y: float, ncol: int = 1) -> str:
        """The legend with its top-left corner at (x, y), in ``ncol`` columns (class ``legend``)."""
        entries = self._legend_entries()
        col, width, height = self.legend_size(ncol)
        rows = math.ceil(len(entries) / ncol)
        out = [f"<g class='legend'><rect x='{_num(x)}' y='{_num(y)}' width='{_num(width)}' height='{_num(height)}' "
               "fill='#fff' fill-opacity='0.85' stroke='#ccc' rx='3'/>"]
        for i, (kind, st) in enumerate(entries):
            x0 = x + col * (i // rows)
            cy = y + 4 + _ROW * (i % rows + 0.5)
            c = st["color"]
            if kind == "band":
                out.append(f"<rect x='{_num(x0 + 6)}' y='{_num(cy - 5)}' width='22' height='10' fill='{c}' "
                           f"fill-opacity='{st['opacity']}'/>")
            elif kind == "errorbar":
                out.append(f"<line x1='{_num(x0 + 17)}' y1='{_num(cy - 6)}' x2='{_num(x0 + 17)}' y2='{_num(cy + 6)}' "
                           f"stroke='{c}' stroke-width='1.2'/>{_marker('D', x0 + 17, cy, c)}")
            else:
                dash = _DASH.get(st.get("dash", "-"))
                out.append(f"<line x1='{_num(x0 + 6)}' y1='{_num(cy)}' x2='{_num(x0 + 28)}' y2='{_num(cy)}' "
                           f"stroke='{c}' stroke-width='{st.get('width', 1.0)}'"
                           + (f" stroke-dasharray='{dash}'" if dash else "") + "/>")
                if st.get("marker"):
                    out.append(_marker(st["marker"], x0 + 17, cy, c))
            out.append(f"<text x='{_num(x0 + 34)}' y='{_num(cy + 4)}' font-size='11' {_FONT}>"
                       f"{escape(st['label'])}</text>")
        out.append("</g>")
        return "".join(out)

    def _legend(self) -> str:
        """The legend inside the axes, at a corner (``legend_at``: "upper right" or "lower right")."""
        left, top, w, h = self.box
        _, width, height = self.legend_size()
        y = top + 8 if self.legend_at == "upper right" else top + h - height - 8
        return self.legend(left + w - width - 8, y)


def _marker(kind: str, x: float, y: float, color: str, r: float = 3.2) -> str:
    if kind == "o":
        return f"<circle cx='{_num(x)}' cy='{_num(y)}' r='{_num(r)}' fill='{color}'/>"
    if kind == "s":
        return f"<rect x='{_num(x - r)}' y='{_num(y - r)}' width='{_num(2 * r)}' height='{_num(2 * r)}' fill='{color}'/>"
    if kind == "^":
        return f"<polygon points='{_num(x)},{_num(y - r * 1.2)} {_num(x - r)},{_num(y + r * 0.8)} " \
               f"{_num(x + r)},{_num(y + r * 0.8)}' fill='{color}'/>"
    if kind == "D":
        return f"<polygon points='{_num(x)},{_num(y - r * 1.3)} {_num(x + r)},{_num(y)} {_num(x)},{_num(y + r * 1.3)} " \
               f"{_num(x - r)},{_num(y)}' fill='{color}'/>"
    raise ValueError(f"marker {kind!r}: one of o, s, ^, D")


def svg_document(size: tuple[int, int], panels: list[LogChart], label: str, uid: str) -> str:
    """An inline ``<svg>`` of ``size`` = (width, height) viewBox units holding ``panels``, scaling with its
    container (a viewBox and no width/height), labelled for screen readers; ``uid`` prefixes its element ids."""
    w, h = size
    body = "".join(p.render(f"{uid}-{i}") for i, p in enumerate(panels))
    for p in panels:  # legends "below": under every panel, outside the axes, in as many columns as fit
        if p.legend_at != "below" or not p.has_data():
            continue
        left = p.box[0]
        col, _, _ = p.legend_size()
        ncol = max(1, int((w - left - 8) // col))
        _, _, height = p.legend_size(ncol)
        body += p.legend(left, h + 4, ncol)
        h += height + 10
    return (f"<svg viewBox='0 0 {w} {h}' role='img' aria-label='{escape(label)}' preserveAspectRatio='xMidYMid meet' "
            f"version='1.1'><rect width='{w}' height='{h}' fill='#fff'/>{body}</svg>")
