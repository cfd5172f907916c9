"""MkDocs hook: pages that list the run's settings take them from their one declaration
(``batsched_ml.config.declare``), so the configuration reference cannot fall out of date."""

from __future__ import annotations


def _settings_table() -> str:
    from batsched_ml.config.declare import settings

    rows = ["| field / campaign key | flag | default | scheduler parameter | needs | what it is |",
            "|---|---|---|---|---|---|"]
    for name, spec in settings().items():
        default = "" if spec.default is None else f"`{spec.default}`"
        param = f"`{spec.param}`" if spec.param else ""
        needs = f"`{settings()[spec.needs].flag}`" if spec.needs else ""
        text = spec.help.replace("|", "\\|")
        rows.append(f"| `{name}` | `{spec.flag}` | {default} | {param} | {needs} | {text} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- settings -->" in markdown:
        markdown = markdown.replace("<!-- settings -->", _settings_table())
    return markdown
