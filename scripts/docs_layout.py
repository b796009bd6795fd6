"""mkdocs hook: the package laid out as the wheel installs it, for the API reference.

mkdocstrings reads the sources statically, and the repository keeps the
subpackages beside `mcgs_jax/`; this hook links them into `build/docs_api/`
in the installed layout (`mcgs_jax.benchmarks.layout`; mkdocs.yml points the
handler there) when mkdocs loads its config, before any page is rendered.
"""

import pathlib

from mcgs_jax.benchmarks import layout

ROOT = pathlib.Path(__file__).resolve().parents[1]

layout.link(ROOT, ROOT / "build" / "docs_api")
