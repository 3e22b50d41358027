"""Errors as JSON problem bodies (RFC 9457 style): type, title, status, detail and the field at fault."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from kb_server.factlookup import AcceleratorNotFound, FactNotFound
from kb_server.prompt import PromptError

log = logging.getLogger("kb_server.api")
PROBLEM_TYPE = "https://kernelkb.dev/problems/"  # + a slug; documentation of each kind of problem
_TITLES = {400: "Bad request", 401: "Unauthorized", 403: "Forbidden", 404: "Not found",
           405: "Method not allowed", 409: "Conflict", 413: "Content too large", 415: "Unsupported media type",
           422: "Invalid input", 429: "Too many requests", 500: "Internal server error",
           501: "Not implemented", 503: "Service unavailable"}


class Problem(Exception):
    """Raise in a route to answer with a problem body."""

    def __init__(self, status: int, detail: str, field: str | None = None, slug: str | None = None,
                 extra: dict | None = None, headers: dict | None = None):
        super().__init__(detail)
        self.status, self.detail, self.field = status, detail, field
        self.slug = slug or _TITLES.get(status, "error").lower().replace(" ", "-")
        self.extra, self.headers = extra or {}, headers


def problem_response(problem: Problem) -> JSONResponse:
    body = {"type": PROBLEM_TYPE + problem.slug, "title": _TITLES.get(problem.status, "Error"),
            "status": problem.status, "detail": problem.detail}
    if problem.field is not None:
        body["field"] = problem.field
    body.update(problem.extra)
    return JSONResponse(body, status_code=problem.status, headers=problem.headers,
                        media_type="application/problem+json")


def _field_of(loc: tuple) -> str:
    parts = list(loc[1:]) if loc and loc[0] in ("body", "query", "path", "header", "cookie") else list(loc)
    return ".".join(map(str, parts)) or ".".join(map(str, loc))


async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    for e in exc.errors():
        if e.get("type") == "json_invalid":  # its location is a character offset, not a field
            return problem_response(await _malformed_json(request, e))
    errors = [{"field": _field_of(tuple(e.get("loc", ()))), "message": e.get("msg", "")}
              for e in exc.errors()]
    first = errors[0] if errors else {"field": None, "message": "invalid request"}
    detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return problem_response(Problem(422, detail, field=first["field"], slug="invalid-input",
                                    extra={"errors": errors}))


async def _malformed_json(request: Request, error: dict) -> Problem:
    """The body is not JSON: where it breaks, as a character offset, a line and a column."""
    loc = tuple(error.get("loc", ()))
    offset = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else None
    why = (error.get("ctx") or {}).get("error") or "not valid JSON"
    where, extra = "", {}
    if offset is not None:
        body = (await request.body()).decode("utf-8", errors="replace")
        line = body.count("\n", 0, offset) + 1
        column = offset - (body.rfind("\n", 0, offset) + 1) + 1
        where = f" at line {line}, column {column} (character {offset})"
        extra = {"position": offset, "line": line, "column": column}
    return Problem(400, f"the request body is not valid JSON: {why}{where}", field="body", slug="malformed-json",
                   extra=extra)


async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    return problem_response(Problem(exc.status_code, str(exc.detail), field=getattr(exc, "field", None),
                                    headers=getattr(exc, "headers", None)))


async def _problem(request: Request, exc: Problem) -> JSONResponse:
    return problem_response(exc)


async def _prompt_error(request: Request, exc: PromptError) -> JSONResponse:
    status = 404 if exc.field == "accelerator" else 422
    cause = exc.__cause__
    extra = {"known": cause.known} if isinstance(cause, AcceleratorNotFound) else None
    return problem_response(Problem(status, str(exc), field=exc.field, extra=extra))


async def _accelerator_not_found(request: Request, exc: AcceleratorNotFound) -> JSONResponse:
    return problem_response(Problem(404, str(exc), field="accelerator", slug="unknown-accelerator",
                                    extra={"known": exc.known}))


async def _fact_not_found(request: Request, exc: FactNotFound) -> JSONResponse:
    return problem_response(Problem(404, str(exc), field="q", slug="no-matching-fact",
                                    extra={"fields": exc.fields}))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return problem_response(Problem(500, f"internal error: {type(exc).__name__}; see the server log"))


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(Problem, _problem)
    app.add_exception_handler(PromptError, _prompt_error)
    app.add_exception_handler(AcceleratorNotFound, _accelerator_not_found)
    app.add_exception_handler(FactNotFound, _fact_not_found)
    app.add_exception_handler(Exception, _unexpected)
