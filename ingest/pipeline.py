"""The ingest pipeline: files -> chunks and kernel records -> the store, idempotently.

Usage: report = ingest_paths(store, [Path("corpus")], IngestOptions(prune=True))

1. Walk the paths; hash every file; files whose hash the store already holds (and, for documents,
   cut by the same chunking rules and sizes) are skipped before any parsing or embedding.
2. Parse the changed files (markdown with front matter, PDF, HTML, kernel + sidecar, accelerator facts).
   A file that cannot be read as what it is (malformed YAML, a field of the wrong type, a fact without
   its unit) is listed in the report's errors with its line and field; the other files still ingest.
3. Embed the chunks the store lacks, then write them through Store.upsert_documents, which adds
   new chunks before deleting stale ones and rolls back on failure: the previous state stays whole.
   Facts are stored whole per file (Store.put_facts) and every process sees them at once.
4. With prune, delete documents under the given paths whose files are gone.
Front matter is checked against one schema (ingest.frontmatter) and the knowledge base's facts
(ingest.checks): what is worth a warning is listed in the report's warnings with file, line and field,
and with `strict` the file is refused instead. A file that holds no text to index (empty, or front
matter alone) is not stored, and neither is a document whose bytes the store already holds under
another name: the same content is stored once.
A document's id comes from its file's path relative to the corpus or upload folder, else its absolute
path (document_id): the same file ingested through two folders is one document, two folders' README.md
are two; a file stored under an id of the older rule (relative to the folder given) is re-keyed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ingest.bundle import bundled_source
from ingest.checks import KnownIds
from ingest.chunking import CHUNKER_VERSION, Block, pack_blocks
from ingest.facts import FACTS_SUFFIXES, is_facts_file, is_kernel_yaml, read_facts
from ingest.frontmatter import FrontMatterError, FrontMatterRead, FrontMatterWarning, read_front_matter
from ingest.html import html_blocks
from ingest.kernels import KERNEL_SUFFIXES, read_kernel, sidecar_for
from ingest.markdown import markdown_blocks
from ingest.pdf import pdf_blocks
from kb_server.schemas import Chunk, normalize_id
from kb_server.store import DocumentWrite, Store, chunk_id

DOC_SUFFIXES = {".md", ".markdown", ".pdf", ".html", ".htm", ".txt"}
TEXT_SUFFIXES = {".txt"}  # plain text: read as markdown without front matter
_QUIET_SUFFIXES = {".json", ".toml", ".cfg", ".lock", ".pyc"}  # data in a folder: not warned
SUPPORTED = "md, pdf, html, txt, yaml"  # what a file named on the command line may be


NO_TEXT = "holds no text to index (it is empty, or front matter alone); nothing was stored"


class IngestError(ValueError):
    """The ingest could not start (a path that does not exist); nothing was written."""


class NoText(ValueError):
    """A document file that holds no text to index."""


@dataclass(frozen=True)
class IngestOptions:
    """Metadata for files without front matter (PDF, HTML, bare markdown), and pruning."""

    accelerator: tuple[str, ...] = ("any",)
    vendor: str | None = None  # None: inferred from the accelerators' facts when they agree, else "any"
    kind: str = "guide"
    prune: bool = False
    strict: bool = False  # warnings (unknown fields, kinds, accelerator ids, vendors) refuse the file
    name: str | None = None  # the name shown for the one file given (an upload's own name), else its path


@dataclass
class IngestReport:
    written: list[str] = field(default_factory=list)  # sources added or replaced
    unchanged: int = 0
    deleted: list[str] = field(default_factory=list)  # sources pruned
    kernels: list[str] = field(default_factory=list)  # kernel ids added or replaced
    facts: list[str] = field(default_factory=list)  # accelerator ids whose facts were added or replaced
    chunks_written: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    errors: list[str] = field(default_factory=list)  # "file:line: field 'x': what is wrong"; not ingested
    warnings: list[str] = field(default_factory=list)  # "file:line: field 'x': ..."; ingested all the same
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (path, id of the document holding it)


def document_id(path: Path, kind: str, anchors: tuple[Path, ...] = ()) -> str:
    """A document's id: its path relative to the first anchor holding it (the corpus folder, the upload
    folder: ids that survive moving the repo), else its absolute path. Never relative to the folder named
    on the command line, so one file reached through two folders is one document, and two files with
    the same relative path under two folders (two vendors' README.md) are two."""
    path = path.resolve()
    for anchor in anchors:
        anchor = anchor.resolve()
        if anchor in path.parents:
            return _hash_id(kind, path.relative_to(anchor).as_posix())
    return _hash_id(kind, path.as_posix())


def _hash_id(kind: str, name: str) -> str:
    return hashlib.sha256(f"{kind}:{name}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class _File:
    path: Path
    root: Path
    kind: str  # "doc" | "kernel" | "facts"
    anchors: tuple[Path, ...] = ()
    name: str | None = None  # shown instead of the path (an upload's own name)

    @property
    def document_id(self) -> str:
        return document_id(self.path, self.kind, self.anchors)

    @property
    def display(self) -> str:
        return self.name or _shown(self.path)


def chunking_signature(settings) -> str:
    """What, besides a document's bytes, decides its chunks: the rules, the sizes and the tokenizer's model."""
    return f"chunker={CHUNKER_VERSION};max={settings.chunk_max_tokens};overlap={settings.chunk_overlap_tokens};" \
           f"model={Path(str(settings.model)).name}"


def options_signature(options: IngestOptions) -> str:
    """The ingest options that give documents without front matter their metadata: a document stored under
    other options is read again (and rewritten only if its chunks change)."""
    return f";accelerator={','.join(options.accelerator)};vendor={options.vendor or ''};kind={options.kind}"


def file_hash(f: _File) -> str:
    """The stored hash of a file: its bytes (a kernel: its bundled source, so a shared helper's change is the
    kernel's, and its sidecar's); an upload is stored under this name."""
    if f.kind != "kernel":
        return hashlib.sha256(f.path.read_bytes()).hexdigest()
    digest = hashlib.sha256(bundled_source(f.path).encode())
    digest.update(sidecar_for(f.path).read_bytes())
    return digest.hexdigest()


def discover(paths: list[Path], report: IngestReport, anchors: tuple[Path, ...] = (),
             name: str | None = None, strict: bool = False) -> list[_File]:
    """The files to ingest under `paths`; `name` is shown for a single file given (an upload's own name).

    A YAML file in a folder that is neither facts nor a kernel's is named as ignored (refused under
    `strict`); a file named on the command line that ingest cannot read is an error."""
    files: list[_File] = []
    for given in paths:
        given = given.resolve()
        if not given.exists():
            raise IngestError(f"{given}: no such file or directory")
        root = given if given.is_dir() else given.parent
        walk = sorted(p for p in given.rglob("*") if p.is_file()) if given.is_dir() else [given]
        for p in walk:
            if any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(root).parts):
                continue
            suffix = p.suffix.lower()
            shown = name if p == given else None
            if suffix in DOC_SUFFIXES:
                files.append(_File(p, root, "doc", anchors, shown))
            elif suffix in KERNEL_SUFFIXES and sidecar_for(p) is not None:
                files.append(_File(p, root, "kernel", anchors, shown))
            elif suffix in FACTS_SUFFIXES and is_facts_file(p, given=p == given):
                files.append(_File(p, root, "facts", anchors, shown))
            elif suffix in FACTS_SUFFIXES and not is_kernel_yaml(p):
                why = (f"{_shown(p)}: ignored: a YAML file that is neither accelerator facts (none of id, name, vendor, "
                       "compute_units, memory_bandwidth, peak_tflops ... at its top level) nor a kernel's sidecar")
                (report.errors if strict else report.warnings).append(why + (" (refused: --strict)" if strict else ""))
            elif p == given:
                why = (f"a kernel source is ingested with its sidecar ({p.stem}.yaml beside it)"
                       if suffix in KERNEL_SUFFIXES else f"unsupported file type {suffix or '(none)'} ({SUPPORTED})")
                report.errors.append(f"{_shown(p)}: {why}")
            elif suffix not in _QUIET_SUFFIXES | KERNEL_SUFFIXES | FACTS_SUFFIXES:
                report.skipped.append((str(p), f"unsupported file type {suffix or '(none)'}"))
    return files


def _shown(path: Path) -> str:
    """A path as the report shows it: relative to the working folder where it is under it."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def _known_ids(store: Store) -> KnownIds | None:
    """The facts' ids, aliases and vendors to check documents against; None (no checks) when the facts
    cannot be read: a broken facts file is reported where it is loaded, and never stops a document."""
    try:
        return KnownIds.from_facts(store.accelerators())
    except ValueError:
        return None


def _infer_vendor(store: Store, accelerators: tuple[str, ...] | list[str]) -> str:
    """The vendor of these accelerators when their facts agree on one, else "any"."""
    try:
        facts = store.accelerators()
    except ValueError:
        return "any"
    vendors = {facts[a].vendor for a in accelerators if a in facts}
    return vendors.pop() if len(vendors) == 1 and all(a in facts for a in accelerators) else "any"


def read_document(f: _File, options: IngestOptions, vendor: str | Callable[[list[str]], str], max_tokens: int,
                  overlap: int) -> list[Chunk]:
    """Chunks of one document file. Raises FrontMatterError, UnicodeDecodeError or a reader error.

    `vendor` is the vendor of files without one (or a function of their accelerator ids that gives it).
    """
    return read_document_checked(f, options, vendor, max_tokens, overlap)[0]


def read_document_checked(f: _File, options: IngestOptions, vendor: str | Callable[[list[str]], str],
                          max_tokens: int, overlap: int, known: KnownIds | None = None,
                          ) -> tuple[list[Chunk], list[FrontMatterWarning]]:
    """read_document, with the warnings of its front matter (checked against `known`, the facts' ids)."""
    suffix = f.path.suffix.lower()
    warnings: list[FrontMatterWarning] = []
    infer = vendor if callable(vendor) else (lambda _accs: vendor)
    accelerators = [normalize_id(a) for a in options.accelerator] or ["any"]
    meta = {"accelerator": accelerators, "vendor": normalize_id(options.vendor or infer(accelerators)),
            "kind": normalize_id(options.kind), "source_urls": [], "metadata": {}}
    if suffix == ".pdf":
        title, blocks = pdf_blocks(f.path)
        if title == f.path.stem:  # no title in the PDF: the file's own name, not the name it is stored under
            title = Path(f.display).stem
    else:
        raw = f.path.read_bytes()
        if b"\x00" in raw[:8192]:
            raise UnicodeDecodeError("utf-8", raw[:1], 0, 1, "binary file (NUL bytes)")
        text = raw.decode("utf-8")
        if suffix in (".html", ".htm"):
            title, blocks = html_blocks(text, Path(f.display))
        else:
            read = read_front_matter(text, f.display) if suffix not in TEXT_SUFFIXES else FrontMatterRead(None, text)
            front, body, warnings = read.front, read.body, list(read.warnings)
            title = front.title if front else None
            if front is not None:
                accs = front.accelerator or meta["accelerator"]
                if known is not None and front.accelerator:
                    accs, more = known.accelerators(front.accelerator, f.display, read.lines["accelerator"],
                                                    read.keys["accelerator"])
                    warnings += more
                vendor_ = front.vendor or (meta["vendor"] if not front.accelerator else
                                           normalize_id(options.vendor or infer(accs)))
                if known is not None and front.vendor:
                    warnings += known.vendor(front.vendor, accs, f.display, read.lines["vendor"], read.keys["vendor"])
                meta = {"accelerator": accs, "vendor": vendor_, "kind": front.kind or meta["kind"],
                        "source_urls": front.source_urls, "metadata": front.metadata}
            title, blocks = markdown_blocks(body, Path(f.display), title)
    chunks = _to_chunks(f, title, blocks, meta, max_tokens, overlap)
    if not chunks:
        raise NoText(f"{f.display}: {NO_TEXT}")
    return chunks, warnings


def _to_chunks(f: _File, title: str, blocks: list[Block], meta: dict, max_tokens: int, overlap: int) -> list[Chunk]:
    chunks, seen = [], {}
    if not meta.get("metadata"):
        meta = {k: v for k, v in meta.items() if k != "metadata"}  # ids of chunks without any stay as they were
    for heading, text in pack_blocks(blocks, max_tokens, overlap):
        fields = {"source": f.display, "title": title, **meta}
        key = (heading, text)
        seen[key] = seen.get(key, -1) + 1  # identical chunks in one document get distinct ids
        cid = chunk_id(f.document_id, list(heading), text, fields, seen[key])
        chunks.append(Chunk(id=cid, document_id=f.document_id, text=text, heading_path=list(heading), **fields))
    return chunks


def ingest_paths(store: Store, paths: list[Path], options: IngestOptions = IngestOptions(),
                 progress: Callable[[str, int], Callable[[int], None]] | None = None) -> IngestReport:
    """Ingest files under `paths` into `store`. `progress(label, total)` returns an advance(n) callback."""
    report = IngestReport()
    files = discover(paths, report, id_anchors(store.settings), options.name, options.strict)
    registry = store.registry()
    settings = store.settings
    chunker = chunking_signature(settings)
    signature = chunker + options_signature(options)
    holders = {m.get("file_hash"): (i, m.get("source", "")) for i, m in registry.items()
               if m.get("type") in ("document", "facts")}
    docs: list[DocumentWrite] = []
    restamped: list[DocumentWrite] = []  # read again under new options, the same chunks: only the record changes
    kernels = []
    known_ids: KnownIds | None = None
    facts_read = False
    option_problems: list[str] = []  # an --accelerator without facts
    files.sort(key=lambda f: f.kind != "facts")  # facts first: documents of the same batch may name their chip
    advance_read = progress("reading", len(files)) if progress and len(files) > 50 else None
    for f in files:
        if advance_read is not None:
            advance_read(1)
        try:
            digest = file_hash(f)
            stored = registry.get(f.document_id, {})
            if stored.get("file_hash") == digest and (f.kind != "doc" or stored.get("chunking") == signature):
                report.unchanged += 1
                continue
            holder = holders.get(digest) if f.kind != "kernel" else None
            if holder is not None and holder[0] != f.document_id and holder[1] != str(f.path):
                report.duplicates.append((f.display, holder[0]))  # the same bytes, stored once
                report.unchanged += 1
                continue
            if f.kind == "kernel":
                kernels.append((f, read_kernel(f.path, f.display), digest))
            elif f.kind == "facts":
                record = read_facts(f.path, f.display)
                report.warnings += _replaced_facts(store, registry, f, record.id)
                store.put_facts(f.document_id, record, digest, str(f.path), name=f.display,
                                size_bytes=f.path.stat().st_size)
                report.facts.append(record.id)
                holders[digest] = (f.document_id, str(f.path))
                registry[f.document_id] = {"type": "facts", "accelerator_id": record.id, "source": str(f.path),
                                           "name": f.display}  # a later file of this batch with the same id
            else:
                if not facts_read:  # after the facts of this batch are in
                    known_ids, facts_read = _known_ids(store), True
                    options, option_problems = _checked_options(options, known_ids)
                    if option_problems and options.strict:
                        report.errors += [f"{p} (refused: --strict; no document was ingested)"
                                          for p in option_problems]
                    else:
                        report.warnings += option_problems
                if option_problems and options.strict:
                    continue
                chunks, warnings = read_document_checked(
                    f, options, lambda accs: _infer_vendor(store, accs), settings.chunk_max_tokens,
                    settings.chunk_overlap_tokens, known_ids)
                if warnings and options.strict:
                    report.errors += [f"{w} (refused: --strict)" for w in warnings]
                    continue
                report.warnings += [str(w) for w in warnings]
                write = DocumentWrite(f.document_id, chunks, digest, str(f.path), signature, name=f.display,
                                      size_bytes=f.path.stat().st_size)
                same_cut = stored.get("chunking", "").partition(";accelerator=")[0] == chunker
                if stored.get("file_hash") == digest and same_cut and \
                        {c.id for c in chunks} == store.chunk_ids_of([f.document_id]):
                    restamped.append(write)  # the options changed, but not for this file (its front matter says)
                    report.unchanged += 1
                else:
                    docs.append(write)
                holders[digest] = (f.document_id, str(f.path))
        except FrontMatterError as exc:
            report.errors.append(str(exc))
        except NoText as exc:
            if options.strict:
                report.errors.append(f"{exc} (refused: --strict)")
            else:
                report.skipped.append((f.display, NO_TEXT))
        except (OSError, UnicodeDecodeError) as exc:
            report.skipped.append((f.display, f"unreadable: {exc}"))
        except Exception as exc:  # noqa: BLE001  a reader (pypdf, lxml) failing on a broken file
            report.skipped.append((f.display, f"could not be parsed: {type(exc).__name__}: {exc}"))
    todo = store.missing_chunk_ids(c.id for d in docs for c in d.chunks)
    advance = progress("embedding", len(todo)) if progress and todo else None
    store.upsert_documents(docs + restamped, progress=advance)
    report.written = [d.source for d in docs]
    report.chunks_written = len(todo)
    for f, record, digest in kernels:
        report.kernels.append(store.register_kernel_file(f.document_id, record, digest, str(f.path), name=f.display))
    _drop_renamed(store, {str(f.path): f.document_id for f in files})
    if options.prune:
        report.deleted = _prune(store, paths, {f.document_id for f in files})
    if docs or report.deleted:
        store.refresh_lexical()  # so the next search (maybe in another process) starts warm
    return report


def _checked_options(options: IngestOptions, known: KnownIds | None) -> tuple[IngestOptions, list[str]]:
    """The options with each --accelerator alias read as its id, and a line for each id without facts (checked as
    front matter's ids are)."""
    if known is None:
        return options, []
    accs = [normalize_id(a) for a in options.accelerator]
    resolved, warnings = known.accelerators(accs, "--accelerator", 0, "accelerator")
    problems = [f"--accelerator: {w.message}" for w in warnings]
    return replace(options, accelerator=tuple(resolved) or ("any",)), problems


def _replaced_facts(store: Store, registry: dict[str, dict], f: _File, accelerator_id: str) -> list[str]:
    """Warnings naming the facts file(s) whose facts for this id the file `f` replaces (the newest file wins)."""
    before = [m.get("name") or m.get("source", "") for i, m in registry.items()
              if m.get("type") == "facts" and m.get("accelerator_id") == accelerator_id and i != f.document_id]
    corpus = Path(store.settings.corpus_dir) / "accelerators" / f"{accelerator_id}.yaml"
    if not before and accelerator_id in store.corpus_facts() and corpus.resolve() != f.path.resolve():
        before = [str(corpus)]
    return [f"{accelerator_id}: facts from {f.display} replace those from {', '.join(before)}"] if before else []


def id_anchors(settings) -> tuple[Path, ...]:
    """The folders document ids are relative to: the corpus, then the server's uploads."""
    return (Path(settings.corpus_dir), Path(settings.home) / "uploads")


def _drop_renamed(store: Store, ids_by_source: dict[str, str]) -> None:
    """A file stored earlier under another id (by an older id rule) keeps only its current record."""
    for old_id, source in store.document_sources().items():
        new_id = ids_by_source.get(source)
        if new_id is not None and new_id != old_id:
            store.delete_document(old_id)


def _prune(store: Store, paths: list[Path], seen: set[str]) -> list[str]:
    roots = [p.resolve() for p in paths]
    deleted = []
    for document_id, source in store.document_sources().items():
        src = Path(source)
        under = any(src == r or r in src.parents for r in roots)
        if under and document_id not in seen and not src.exists():
            store.delete_document(document_id)
            deleted.append(source)
    return deleted

