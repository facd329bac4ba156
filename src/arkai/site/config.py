"""The user's ``mkdocs.yml`` (read, never written) and the generated config that inherits it.

The generated ``.site-build/mkdocs.yml`` says ``INHERIT: ../mkdocs.yml`` and adds only what
the generator owns: the docs folder, the short explicit ``nav``, ``not_in_nav`` for the
thousands of item pages, arkai's CSS/JS and its MkDocs hook. MkDocs resolves relative paths
of an inherited file against the *generated* file's folder, so the path settings MkDocs
itself defines (``site_dir``, ``theme.custom_dir``, ``hooks``, ``watch``) are re-based here;
list settings (``extra_css``, ``extra_javascript``, ``hooks``, ``watch``) are re-stated with
arkai's entries appended, because inheritance replaces lists rather than merging them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from arkai.adapters.fs import read_repo_file
from arkai.errors import LibraryError
from arkai.site import links

USER_CONFIG = "mkdocs.yml"
BUILD_DIR = ".site-build"
DOCS_DIR = "docs"
DEFAULT_SITE_NAME = "arkai library"
CSS = "assets/arkai/arkai.css"
JS = "assets/arkai/arkai.js"
HOOKS = Path(__file__).with_name("hooks.py")
NOT_IN_NAV = ("/items/", "/transcripts/", "/tags/", "/entities/", "/topics/")
#: MkDocs stamps the build date into sitemap.xml (``lastmod``) and sitemap.xml.gz's header
#: unless ``SOURCE_DATE_EPOCH`` is set. A fixed date (none: the epoch) keeps a build a function
#: of its inputs, so ``dvc.lock``'s hash of site/ does not change with the clock or a commit.
BUILD_EPOCH = "0"


@contextmanager
def reproducible_build_date() -> Iterator[None]:
    """``SOURCE_DATE_EPOCH`` for an in-process MkDocs build; a value already set wins."""
    if "SOURCE_DATE_EPOCH" in os.environ:
        yield
        return
    os.environ["SOURCE_DATE_EPOCH"] = BUILD_EPOCH
    try:
        yield
    finally:
        os.environ.pop("SOURCE_DATE_EPOCH", None)


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks (``not_in_nav: |``)."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads MkDocs' custom tags (``!ENV``, ``!relative``, ``!!python/name``)
    as plain values instead of failing."""


def _any_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    return None  # pragma: no cover


_Loader.add_multi_constructor("!", _any_tag)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", _any_tag)


@dataclass(frozen=True)
class UserConfig:
    root: Path
    path: Path | None
    """The user's mkdocs.yml, or None when the repo has none (defaults are used)."""
    data: dict[str, Any]

    @property
    def site_name(self) -> str:
        name = self.data.get("site_name")
        return name if isinstance(name, str) and name.strip() else DEFAULT_SITE_NAME

    @property
    def directory_urls(self) -> bool:
        return self.data.get("use_directory_urls", True) is not False

    @property
    def site_dir(self) -> Path:
        value = self.data.get("site_dir")
        return self.root / (value if isinstance(value, str) and value else "site")

    @property
    def custom_dir(self) -> Path | None:
        theme = self.data.get("theme")
        value = theme.get("custom_dir") if isinstance(theme, dict) else None
        return self.root / value if isinstance(value, str) and value else None


def load_user_config(root: Path) -> UserConfig:
    path = root / USER_CONFIG
    try:
        data = read_repo_file(path, root)
        assert data is not None
        raw = yaml.load(data.decode("utf-8"), Loader=_Loader)
    except FileNotFoundError:
        return UserConfig(root, None, {})
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: not valid YAML ({exc})") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise LibraryError(f"{path}: expected a mapping at the top level")
    return UserConfig(root, path, raw)


def _rebase(value: Any, root: Path, build: Path) -> Any:
    if isinstance(value, str) and value and not os.path.isabs(value) and "://" not in value:
        return os.path.relpath(root / value, build)
    return value


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def nav(*, topics: bool, beliefs: bool) -> list[Any]:
    """The explicit, short navigation (item pages stay out of it)."""
    out: list[Any] = [
        {"Home": links.HOME},
        {"Library": [{"By type": links.LIBRARY}, {"By date": links.LIBRARY_DATES}]},
        {"Tags": links.TAGS},
        {"Entities": links.ENTITIES},
    ]
    if topics:
        out.append({"Topics": links.TOPICS})
    if beliefs:
        out.append({"Beliefs": links.BELIEFS})
    out.append({"Validation": links.VALIDATION})
    return out


def generated_config(
    user: UserConfig, build: Path, *, topics: bool, beliefs: bool, site_url: str | None = None
) -> str:
    """The text of ``.site-build/mkdocs.yml`` (``site_url``: used when the user's config sets
    none, see :mod:`arkai.site.siteurl`)."""
    root = user.root
    cfg: dict[str, Any] = {}
    if user.path is not None:
        cfg["INHERIT"] = os.path.relpath(user.path, build)
    else:
        cfg["site_name"] = DEFAULT_SITE_NAME
        cfg["theme"] = {"name": "material"}
    if site_url and not user.data.get("site_url"):
        cfg["site_url"] = site_url
    cfg["docs_dir"] = DOCS_DIR
    cfg["site_dir"] = os.path.relpath(user.site_dir, build)
    theme = user.data.get("theme")
    if isinstance(theme, dict) and isinstance(theme.get("custom_dir"), str):
        cfg["theme"] = {"custom_dir": _rebase(theme["custom_dir"], root, build)}
    cfg["nav"] = nav(topics=topics, beliefs=beliefs)
    cfg["not_in_nav"] = "\n".join(NOT_IN_NAV) + "\n"
    cfg["extra_css"] = [*_as_list(user.data.get("extra_css")), CSS]
    cfg["extra_javascript"] = [*_as_list(user.data.get("extra_javascript")), JS]
    cfg["hooks"] = [_rebase(h, root, build) for h in _as_list(user.data.get("hooks"))]
    cfg["hooks"].append(str(HOOKS))
    if isinstance(user.data.get("watch"), list):
        cfg["watch"] = [_rebase(w, root, build) for w in user.data["watch"]]
    head = (
        "# Generated by `arkai site build` on every build: do not edit. Theme and settings\n"
        "# live in ../mkdocs.yml, which this file inherits.\n"
    )
    return head + yaml.dump(cfg, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
