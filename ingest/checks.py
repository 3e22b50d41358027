"""What ingest checks of a document's metadata against the knowledge base: accelerator ids and vendors.

Usage: known = KnownIds.from_facts(store.accelerators())
       ids, warnings = known.accelerators(["H100-SXM", "gaudi4"], "docs/a.md", line=3, key="accelerator")

An alias of a known accelerator (`h100-sxm`) is read as its id; an id without a facts file is kept and
named in a warning with the known ids (the document is found by that id, but no prompt can target it
until its facts are ingested: `kkb facts --template ID` writes a file to fill). A vendor that no
accelerator's facts name, or that contradicts the facts of the document's accelerators, is a warning too.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from ingest.frontmatter import FrontMatterWarning
from kb_server.facts import AcceleratorFacts, accelerator_key, accelerator_names


@dataclass(frozen=True)
class KnownIds:
    """The accelerator ids, aliases and vendors of the knowledge base's facts."""

    vendor_of: dict[str, str] = field(default_factory=dict)  # accelerator id -> vendor
    aliases: dict[str, str] = field(default_factory=dict)  # accelerator_key of an id, alias or name -> its id

    @classmethod
    def from_facts(cls, facts: dict[str, AcceleratorFacts]) -> KnownIds:
        return cls({f.id: f.vendor for f in facts.values()}, accelerator_names(facts))

    def accelerators(self, ids: list[str], path: str, line: int, key: str) -> tuple[list[str], list[FrontMatterWarning]]:
        """The ids with aliases read as ids, and a warning for each id that has no facts."""
        out, unknown = [], []
        for acc in ids:
            acc = self.aliases.get(accelerator_key(acc), acc)
            if acc != "any" and acc not in self.vendor_of:
                unknown.append(acc)
            out.append(acc)
        warnings = [FrontMatterWarning(path, line, key, self.unknown_accelerator(acc)) for acc in unknown]
        return list(dict.fromkeys(out)), warnings

    def unknown_accelerator(self, acc: str) -> str:
        """Why an accelerator id without facts is worth a warning: the closest known id, else how to add it."""
        close = difflib.get_close_matches(accelerator_key(acc), self.aliases, n=1, cutoff=0.6)
        meant = f"did you mean '{self.aliases[close[0]]}'? If not, " if close else ""
        return (f"accelerator '{acc}' has no facts in the knowledge base (known: "
                f"{', '.join(sorted(self.vendor_of)) or 'none'}); {meant}ingest its facts file "
                f"(`kkb facts --template {acc}` writes one to fill) so that prompts can target it")

    def vendor(self, vendor: str, accelerators: list[str], path: str, line: int, key: str) -> list[FrontMatterWarning]:
        """A warning when no facts name this vendor, or when the accelerators' facts name another."""
        if vendor == "any":
            return []
        theirs = {self.vendor_of[a] for a in accelerators if a in self.vendor_of}
        if theirs and vendor not in theirs:
            return [FrontMatterWarning(path, line, key, f"vendor '{vendor}' differs from the facts of "
                                       f"{', '.join(a for a in accelerators if a in self.vendor_of)} "
                                       f"({', '.join(sorted(theirs))})")]
        known = set(self.vendor_of.values())
        if not theirs and vendor not in known:
            return [FrontMatterWarning(path, line, key, f"vendor '{vendor}' is not the vendor of any accelerator "
                                       f"in the knowledge base (known: {', '.join(sorted(known)) or 'none'})")]
        return []
