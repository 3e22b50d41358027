"""GET /docs: the API's reference as one self-contained HTML page, rendered from the app's OpenAPI document.

Usage: app.include_router(docs_page.router)   (kb_server.main; FastAPI's own /docs is turned off)

FastAPI's Swagger UI loads its script and styles from a CDN, so offline it is a blank page. This page
needs nothing from outside: no script, styles inline. Each route shows its parameters, its body and its
answers, each schema its fields with types, bounds and defaults; the raw document stays at /openapi.json.
"""

from __future__ import annotations

import json
from html import escape

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)

_STYLE = """body{font:15px/1.45 system-ui,sans-serif;max-width:68rem;margin:2rem auto;padding:0 1rem;color:#222}
code,pre{font-family:ui-monospace,monospace;font-size:13px}h2{border-bottom:1px solid #ccc;margin-top:2.5rem}
.route{border:1px solid #ddd;border-radius:6px;padding:.6rem 1rem;margin:1rem 0}
.method{font-weight:700;text-transform:uppercase;padding:.1rem .5rem;border-radius:4px;background:#e8eef9}
table{border-collapse:collapse;margin:.4rem 0}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;
vertical-align:top}th{background:#f5f5f5}.muted{color:#666}"""
_METHODS = ("get", "post", "put", "patch", "delete")


@router.get("/docs", response_class=HTMLResponse)
def docs(request: Request) -> HTMLResponse:
    return HTMLResponse(render(request.app.openapi()))


def render(spec: dict) -> str:
    """The whole page for an OpenAPI document."""
    info = spec.get("info", {})
    parts = [(f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{escape(info.get('title', 'API'))}"
             f"</title><style>{_STYLE}</style></head><body>"),
             (f"<h1>{escape(info.get('title', 'API'))} <span class='muted'>v{escape(str(info.get('version', '')))}"
             f"</span></h1><p>{escape(info.get('description', ''))}</p>"),
             ("<p class='muted'>The OpenAPI document: <a href='/openapi.json'>/openapi.json</a>. Errors answer "
             "<code>application/problem+json</code> with <code>detail</code> and the <code>field</code> at fault."
             "</p><h2>Routes</h2>")]
    for path, item in spec.get("paths", {}).items():
        for method in _METHODS:
            if method in item:
                parts.append(_route(path, method, item[method]))
    parts.append("<h2>Schemas</h2>")
    for name, schema in spec.get("components", {}).get("schemas", {}).items():
        parts.append(_schema(name, schema))
    parts.append("</body></html>")
    return "".join(parts)


def _route(path: str, method: str, op: dict) -> str:
    out = [(f"<div class='route' id='{escape(method)}-{escape(path)}'><p><span class='method'>{method}</span> "
           f"<code>{escape(path)}</code> {escape(op.get('summary', ''))}</p>")]
    if op.get("description"):
        out.append(f"<p>{escape(op['description'])}</p>")
    params = op.get("parameters", [])
    if params:
        rows = "".join(f"<tr><td><code>{escape(p['name'])}</code></td><td>{escape(p.get('in', ''))}</td>"
                       f"<td>{'yes' if p.get('required') else 'no'}</td><td>{_type(p.get('schema', {}))}</td>"
                       f"<td>{escape(p.get('description', '') or p.get('schema', {}).get('description', ''))}</td></tr>"
                       for p in params)
        out.append(f"<table><tr><th>parameter</th><th>in</th><th>required</th><th>type</th><th>about</th></tr>"
                   f"{rows}</table>")
    body = op.get("requestBody", {}).get("content", {})
    for media, content in body.items():
        out.append(f"<p>body ({escape(media)}): {_type(content.get('schema', {}))}</p>")
    answers = "".join(f"<li><code>{escape(code)}</code> {escape(r.get('description', ''))}"
                      f"{': ' + _type(next(iter(r.get('content', {}).values()), {}).get('schema', {})) if r.get('content') else ''}"
                      "</li>" for code, r in op.get("responses", {}).items())
    out.append(f"<ul>{answers}</ul></div>")
    return "".join(out)


def _schema(name: str, schema: dict) -> str:
    out = [f"<h3 id='schema-{escape(name)}'>{escape(name)}</h3>"]
    if schema.get("description"):
        out.append(f"<p>{escape(schema['description'])}</p>")
    required = set(schema.get("required", []))
    props = schema.get("properties", {})
    if props:
        rows = "".join(f"<tr><td><code>{escape(field)}</code></td><td>{_type(prop)}</td>"
                       f"<td>{'yes' if field in required else 'no'}</td><td>{_bounds(prop)}</td></tr>"
                       for field, prop in props.items())
        out.append(f"<table><tr><th>field</th><th>type</th><th>required</th><th>bounds, default</th></tr>{rows}"
                   "</table>")
    elif schema.get("enum"):
        out.append(f"<p>one of {escape(', '.join(map(str, schema['enum'])))}</p>")
    return "".join(out)


def _type(schema: dict) -> str:
    """A schema's type in a few words, with links to named schemas."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"<a href='#schema-{escape(name)}'>{escape(name)}</a>"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " | ".join(_type(s) for s in schema[key])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of {_type(schema['additionalProperties'])}"
    if "enum" in schema:
        return escape(" | ".join(map(str, schema["enum"])))
    if "const" in schema:
        return escape(json.dumps(schema["const"]))
    return escape(str(kind))


def _bounds(prop: dict) -> str:
    names = ("minimum", "maximum", "exclusiveMinimum", "minLength", "maxLength", "minItems", "maxItems", "pattern",
             "default")
    return escape(", ".join(f"{n} {json.dumps(prop[n])}" for n in names if n in prop))
