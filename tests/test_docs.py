"""The documentation: the README is a front page whose example runs as
written, the site builds with warnings as errors and documents the API, and
every relative link resolves."""

import dataclasses
import html
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import mcgs_jax

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted([README, ROOT / "CHANGELOG.md"] + list((ROOT / "docs").rglob("*.md")))

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


def test_the_readme_is_a_front_page():
  text = README.read_text()
  assert len(text.splitlines()) <= 200
  for promise in ("make demo", "make test", "make docs", "pip install", "LICENSE"):
    assert promise in text, promise


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
  out = tmp_path_factory.mktemp("site")
  result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
  assert result.returncode == 0, result.stderr[-4000:]
  return out


def _text(page: pathlib.Path) -> str:
  return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text()))


def test_the_site_documents_every_search_config_field(site):
  page = _text(site / "api" / "search" / "index.html")
  for field in dataclasses.fields(mcgs_jax.SearchConfig):
    assert field.name in page, field.name
  assert "q_init" in page and "pessimistic" in page   # a field's own words, not only its name
  for name in ("search", "init", "simulate", "run_simulations", "summarize", "advance",
               "reroot", "from_mctx", "SearchOutput"):
    assert f"mcgs_jax.{name}" in page, name


def test_the_site_has_every_page_of_the_nav(site):
  for page in ("index.html", "guide/search/index.html", "guide/from_mctx/index.html",
               "api/envs/index.html", "api/learning/index.html", "results/index.html",
               "architecture/index.html"):
    assert (site / page).is_file(), page
  assert "mcgs_jax.envs.make" in _text(site / "api" / "envs" / "index.html")
