"""Text as people save and paste it, made readable for the ``nvidia-smi topo -m`` reader.

- Encodings: UTF-8 with or without a byte-order mark, UTF-16 with a mark (what PowerShell's ``>``
  writes) or without one (told by where the NUL bytes fall); text in no Unicode encoding is read as
  Latin-1, since the matrix itself is ASCII and only a prompt or comment line could hold such bytes.
- Characters: non-breaking and other Unicode spaces become spaces; zero-width characters and stray
  byte-order marks go.
- Lost tabs: nvidia-smi separates columns with tabs, and a web page that drops them runs names
  together (``GPU0GPU1GPU2``, ``NV4NODE0-31,64-950``); :func:`split_header` and :func:`split_row`
  take such runs apart by the shapes the names and cells can have.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from extender.model.devices import TopologyError

__all__ = ["decode_text", "normalize_text", "split_header", "split_row"]

_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_INVISIBLE = re.compile(r"[\u200b-\u200d\u2060\ufeff]")
_HEADER_WORD = re.compile(r"GPU\d+|NIC\d+|mlx\d+_\d+|CPU|Affinity|NUMA|GPU|ID")
_LINK = re.compile(r"X|PIX|PXB|PHB|NODE|SYS|SOC|NV\d+")
_CPU_LIST = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")
# Longest row this splits: the work is a search, and no real matrix row comes near.
_MAX_ROW = 4000
_MAX_DEVICES = 512  # the search recurses once per cell
# Bonded NVLinks between one pair: 18 on NVLink 5. "NV1224-47" is NV12 then 24-47 before NV122 then 4-47.
_MAX_NVLINKS = 32


def decode_text(data: bytes) -> str:
    """The bytes of a saved text → the text; :class:`TopologyError` only for data no person reads."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if data.startswith(bom):
            return _decode(data[len(bom) :], codec)
    if b"\x00" in data:
        even, odd = data[0::2].count(0), data[1::2].count(0)
        if odd > len(data) // 4 and even == 0:
            return _decode(data, "utf-16-le")
        if even > len(data) // 4 and odd == 0:
            return _decode(data, "utf-16-be")
        line, column = _where(data[: data.index(b"\x00")].decode("latin-1"))
        raise TopologyError(f"line {line}, column {column}: a NUL byte; this is not text in UTF-8 or UTF-16")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _decode(data: bytes, codec: str) -> str:
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        line, column = _where(data[: exc.start].decode(codec, errors="replace"))
        reason = f"bytes that are not {codec.upper()} ({exc.reason})"
        raise TopologyError(f"line {line}, column {column}: {reason}") from None


def _where(before: str) -> tuple[int, int]:
    """(line, column) of the character after ``before``, both from 1."""
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


def normalize_text(text: str) -> str:
    """Unicode spaces → spaces, invisible characters removed."""
    return _INVISIBLE.sub("", _SPACES.sub(" ", text))


def split_header(tokens: list[str]) -> list[str]:
    """``GPU0GPU1GPU2``, ``AffinityNUMA`` → the names they ran together from; other tokens as they are."""
    out: list[str] = []
    for token in tokens:
        words = _HEADER_WORD.findall(token)
        out += words if "".join(words) == token and len(words) > 1 else [token]
    return out


def split_row(tokens: list[str], devices: list[str], trailing: list[str]) -> list[str] | None:
    """A matrix row whose cells ran together → its cells: the device name, one link per device,
    then the values of the trailing columns; None when no reading of it fits the header."""
    if not tokens or sum(map(len, tokens)) > _MAX_ROW or len(devices) > _MAX_DEVICES:
        return None
    head = _device_prefix(tokens[0], devices)
    if head is None:
        return None
    rest = [tokens[0][len(head) :], *tokens[1:]] if len(tokens[0]) > len(head) else tokens[1:]
    # A reading that fills every trailing column first: "0-890N/A" is 0-89, 0, N/A, not 0-890, N/A.
    for whole in (True, False):
        for cells in _readings(rest, 0, 0, len(devices), trailing, whole):
            return [head, *cells]
    return None


def _device_prefix(token: str, devices: list[str]) -> str | None:
    for name in sorted(devices, key=len, reverse=True):
        if token.startswith(name) and not token[len(name) : len(name) + 1].isdigit():
            return name
    return None


def _readings(
    tokens: list[str], at: int, pos: int, links: int, trailing: list[str], whole: bool
) -> Iterator[list[str]]:
    """Every way to cut tokens[at][pos:] and the tokens after it into ``links`` link cells and then
    the values of ``trailing`` (all of them when ``whole``), most likely first (longest NV counts and
    CPU lists)."""
    if at == len(tokens):
        if links == 0 and not (whole and trailing):
            yield []
        return
    text = tokens[at][pos:]
    if links:
        pieces = sorted(
            (text[:n] for n in range(len(text), 0, -1) if _LINK.fullmatch(text[:n])),
            key=lambda cell: cell.startswith("NV") and int(cell[2:]) > _MAX_NVLINKS,
        )
    elif trailing:
        pieces = _values(text, trailing[0])
    else:
        return
    for value in pieces:
        done = pos + len(value) == len(tokens[at])
        next_at, next_pos = (at + 1, 0) if done else (at, pos + len(value))
        left = (links - 1, trailing) if links else (0, trailing[1:])
        for more in _readings(tokens, next_at, next_pos, *left, whole):
            yield [value, *more]


def _values(text: str, name: str) -> list[str]:
    """Prefixes of text that can be a value of the trailing column ``name``, longest first."""
    if text.startswith("N/A"):
        return ["N/A"]
    found = []
    for n in range(len(text), 0, -1):
        prefix = text[:n]
        numa_id = name == "GPU NUMA ID"
        if (numa_id and prefix.isdigit()) or (not numa_id and _CPU_LIST.fullmatch(prefix) and _ascending(prefix)):
            found.append(prefix)
    return found


def _ascending(cpu_list: str) -> bool:
    """``0-31,64-95`` yes; ``0-31,64-9`` no: a range runs upward and each starts past the last."""
    last = -1
    for part in cpu_list.split(","):
        lo, _, hi = part.partition("-")
        if int(lo) <= last or (hi and int(hi) < int(lo)):
            return False
        last = int(hi or lo)
    return True
