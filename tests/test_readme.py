"""The README's first API example runs as written, and the documentation's
relative links resolve."""

import pathlib
import re

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted([README] + list((ROOT / "docs").rglob("*.md")))

_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_readme_example_runs():
  blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
  namespace = {}
  exec(compile(blocks[0], "README.md", "exec"), namespace)
  out = namespace["out"]
  assert out.action.shape == (8,)
  np.testing.assert_allclose(np.asarray(out.action_weights).sum(-1), 1.0, rtol=1e-5)
  assert np.all(np.asarray(out.stats.simulations) == 200)


def _slug(heading: str) -> str:
  """GitHub's anchor for a heading: lower case, punctuation dropped, spaces
  to hyphens."""
  text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
  return text.replace(" ", "-")


def _anchors(path: pathlib.Path) -> set:
  text = _FENCE.sub("", path.read_text())
  return {_slug(m) for m in re.findall(r"^#{1,6} +(.+?) *#*$", text, re.M)}


def broken_links(path: pathlib.Path) -> list:
  """Relative links (and images) of a markdown file whose target file, or
  heading for a `#anchor`, does not exist. Code is skipped."""
  text = _CODE_SPAN.sub("", _FENCE.sub("", path.read_text()))
  broken = []
  for target in _LINK.findall(text):
    if re.match(r"[a-z]+:", target):   # http:, https:, mailto:
      continue
    file, _, anchor = target.partition("#")
    dest = (path.parent / file).resolve() if file else path
    if not dest.exists():
      broken.append(target)
    elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
      broken.append(target)
  return broken


def test_relative_links_resolve():
  assert len(DOCS) >= 5   # README.md and the pages under docs/
  found = {str(p.relative_to(ROOT)): broken_links(p) for p in DOCS}
  assert not any(found.values()), {k: v for k, v in found.items() if v}


def test_link_check_catches_broken_links(tmp_path):
  (tmp_path / "other.md").write_text("# A heading\n\ntext\n")
  page = tmp_path / "page.md"
  page.write_text("[ok](other.md) [ok](other.md#a-heading) [web](https://example.org)\n"
                  "[gone](missing.md) [bad anchor](other.md#nowhere) ![img](pic.png)\n"
                  "`[in code](nowhere.md)` [self](#title)\n\n# Title\n")
  assert broken_links(page) == ["missing.md", "other.md#nowhere", "pic.png"]
