"""The one catalogue of codes: registration refusals, run refusals, page failures.

Every refusal or failure the product reports carries one of these codes. Tests assert on
codes, never on message text; `collection explain CODE` prints the entry. A page failure
code also carries its liveness class (D-62): `gone`, `blocked` or `error`.

Codes are stable: once released, a code keeps its meaning. Add, never rename.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REGISTRATION = "registration"
RUN = "run"
PAGE = "page"
USAGE = "usage"

GONE = "gone"
BLOCKED = "blocked"
ERROR = "error"
LIVENESS_CLASSES = (GONE, BLOCKED, ERROR)


@dataclass(frozen=True)
class Code:
    code: str
    kind: str
    summary: str
    fix: str
    clauses: tuple[str, ...] = ()
    liveness: str | None = None


def _reg(code: str, summary: str, fix: str, *clauses: str) -> Code:
    return Code(code, REGISTRATION, summary, fix, clauses)


def _run(code: str, summary: str, fix: str, *clauses: str) -> Code:
    return Code(code, RUN, summary, fix, clauses)


def _page(code: str, liveness: str, summary: str, fix: str, *clauses: str) -> Code:
    return Code(code, PAGE, summary, fix, clauses, liveness)


_ENTRIES = [
    # --- the document as JSON ---------------------------------------------------------
    _reg("JSON_INVALID", "The file is not valid JSON (or not valid UTF-8).",
         "Fix the syntax at the line and column given."),
    _reg("JSON_DUPLICATE_KEY", "An object carries the same member name twice, so the document is ambiguous.",
         "Keep one of the two members."),
    _reg("JSON_FRACTIONAL_NUMBER",
         "A number is written with a fraction or an exponent (1.0, 1e0); the registered document carries no fractional number anywhere.",
         "Write the number as a plain integer.", "REG-27", "D-41"),
    _reg("JSON_NUMBER_OUT_OF_RANGE", "An integer lies outside the JSON safe-integer range (±(2^53−1)).",
         "Use a smaller number.", "D-41"),
    _reg("JSON_TOO_DEEP", "The document nests arrays or objects deeper than the reader accepts.",
         "Flatten the document; no recipe needs that depth."),
    _reg("DOCUMENT_TOO_LARGE", "The file is larger than a recipe can reasonably be.",
         "Check that the right file was given."),
    _reg("DOCUMENT_NOT_OBJECT", "The top level of the document is not a JSON object.",
         "A source or dataset document is a JSON object."),
    # --- what the schemas say ----------------------------------------------------------
    _reg("SCHEMA_REQUIRED", "A required member is missing.", "Add the member named in the message.", "REG-17"),
    _reg("SCHEMA_UNKNOWN_MEMBER", "A member that the schema does not define is present.",
         "Remove it or correct its spelling.", "REG-10"),
    _reg("SCHEMA_TYPE", "A member has the wrong JSON type.", "Use the type named in the message.", "REG-17"),
    _reg("SCHEMA_ENUM", "A member's value is not one of the allowed values.", "Use one of the values listed.", "REG-17"),
    _reg("SCHEMA_BOUND", "A number lies outside its bound in the bounds table.",
         "Use a value inside the bound named in the message.", "REG-17"),
    _reg("SCHEMA_LENGTH", "A string, array or object has too few or too many entries.",
         "Respect the size named in the message.", "REG-17", "REG-20"),
    _reg("SCHEMA_FORMAT", "A string does not have the required form.", "Use the form named in the message.", "REG-17"),
    _reg("SCHEMA_UNIQUE", "An array that must hold distinct entries holds a repeated one.", "Remove the repeat.", "REG-17"),
    _reg("SCHEMA_INVALID", "The document breaks a rule of its schema.", "Read the message for the rule.", "REG-17"),
    # --- registration rules a schema cannot say ---------------------------------------
    _reg("HOSTED_COLLECTION_UNSUPPORTED",
         "The document names public.https.collection@1.0.0, a different adapter kept only so old receipts re-verify; it is not reachable and 2.0.0 is not a widening of it.",
         "Rewrite the source for public.https.collection@2.0.0.", "REF-09", "REF-10", "REF-11"),
    _reg("COLLECTION_REQUIRED", "The connector is public.https.collection@2.0.0 but the document has no `collection` member.",
         "Add `collection` with `discovery` and `pages`.", "REG-07"),
    _reg("COLLECTION_FORBIDDEN", "A `collection` member sits beside an adapter other than public.https.collection@2.0.0.",
         "Remove `collection`, or use the collection adapter.", "REG-08"),
    _reg("WINDOW_FORBIDDEN", "A collection source declares a `window`; a window narrows one address and a collection lists many.",
         "Remove `window`.", "REG-14"),
    _reg("CLOSED_FORBIDDEN", "A collection source carries `closed` (even `false`); a collection continues across refreshes.",
         "Remove the `closed` member entirely.", "REG-15", "REG-16"),
    _reg("CREDENTIAL_MODE_NOT_NONE", "A collection source must use credential_mode \"none\".",
         "Set connector.credential_mode to \"none\"; collections never authenticate.", "REG-13"),
    _reg("READER_PIN_MISSING", "A connector parameter of the Reader pin (reader.family_id, reader.family_version, reader.decode_options) is missing or repeated.",
         "State each of the three parameters exactly once.", "READ-01"),
    _reg("READER_FAMILY_UNSUPPORTED", "The pinned Reader family is not one of html.tabular, html.web_extract, json.tabular, xml.tabular.",
         "Pin one of the four collection families.", "REG-12"),
    _reg("READER_VERSION_UNSUPPORTED", "This project does not implement the pinned version of the Reader family.",
         "Pin one of the versions listed in the message.", "REG-12"),
    _reg("READER_OPTIONS_NOT_CANONICAL", "reader.decode_options is not canonical JSON (sorted keys, no insignificant whitespace).",
         "Replace the parameter with the one the message prints: JSON, ready to paste.", "READ-02"),
    _reg("READER_OPTIONS_INVALID", "reader.decode_options does not satisfy the pinned family's options schema.",
         "Correct the option named in the message.", "READ-01"),
    _reg("RESERVED_COLUMN_NAME", "The pinned Reader declares a column with one of the seven reserved provenance names.",
         "Rename the column.", "READ-07", "PROV-04"),
    _reg("DUPLICATE_COLUMN_NAME", "The pinned Reader declares two columns of one name; such a relation cannot be read back.",
         "Give every column a distinct name.", "READ-08"),
    _reg("MAX_REQUESTS_REQUIRED", "A collection source must state limits.max_requests.",
         "Add limits.max_requests ≥ discovery.max_requests + pages.max_fetches_per_run.", "REG-11"),
    _reg("REQUEST_BUDGET_SUM", "discovery.max_requests + pages.max_fetches_per_run exceeds limits.max_requests.",
         "Raise limits.max_requests (where redirects are likely, to discovery.max_requests + 2 × max_fetches_per_run) or lower the other two.",
         "REG-33", "REG-34", "FETCH-11"),
    _reg("ORIGIN_NOT_CANONICAL", "An origin is not a canonical https origin (lowercase host, no port, path, userinfo or trailing slash).",
         "Write it as https://host, exactly.", "REG-21", "D-40"),
    _reg("ORIGIN_DUPLICATE", "allowed_origins lists one origin twice.", "Remove the repeat.", "D-40"),
    _reg("DISCOVERY_ORIGIN_NOT_ALLOWED", "allowed_origins does not include the discovery address's own origin.",
         "Add the discovery origin to allowed_origins.", "REG-22"),
    _reg("CONNECTOR_ORIGIN_MISMATCH", "connector.origin is not the discovery address's canonical origin.",
         "Set connector.origin to the origin of discovery.url.", "D-39"),
    _reg("DISCOVERY_URL_INVALID", "The discovery address is not an absolute https URL that this source may reach.",
         "Use an absolute https URL without userinfo, port, whitespace or fragment.", "REG-35", "URL-09", "URL-11", "URL-12"),
    _reg("PAGINATION_KIND_NOT_ALLOWED", "The pagination kind is not allowed for the discovery kind.",
         "Use a pagination kind the discovery table allows for this kind.", "REG-38", "DISC-12", "DISC-17", "DISC-21", "DISC-25"),
    _reg("PAGINATION_PARAMETER_PRESENT", "The discovery address already carries the grammar's own pagination parameter.",
         "Remove the parameter from discovery.url; the grammar writes it.", "PAG-15", "PAG-16"),
    _reg("POINTER_SYNTAX", "A JSON Pointer is not valid RFC 6901 syntax.", "Write \"\" or a pointer starting with \"/\", escaping ~ as ~0 and / as ~1.",
         "REG-36", "DISC-07", "D-14"),
    _reg("REVISION_HINT_WITHOUT_EXTRACTOR", "revisit kind revision_hint needs a revision extractor (json_api with revision.pointer, or sitemap).",
         "Add revision.pointer, or choose another revisit kind.", "REG-32", "D-42"),
    _reg("INTERVAL_TOO_SHORT", "revisit kind interval needs seconds ≥ 3600.", "Use at least 3600 seconds.", "REG-31"),
    _reg("SELECTOR_UNSUPPORTED", "A selector uses something outside the closed selector grammar.",
         "Use only the documented subset; the message gives the offending position.", "DISC-13", "DISC-04"),
    _reg("EXPLICIT_DUPLICATE_PAGE_ID", "Two explicit members share one page_id.", "Give each member its own page_id.", "D-38"),
    _reg("EXPLICIT_URL_INVALID", "An explicit member's url is not an absolute https URL.", "Use an absolute https URL.", "D-38"),
    _reg("EXPLICIT_TOO_MANY_MEMBERS", "There are more explicit members than pages.max_pages allows.",
         "Raise pages.max_pages or list fewer members.", "D-38"),
    _reg("PROBE_FAILED", "validate --probe could not read the first discovery address (robots, egress, HTTP error, redirect, timeout).",
         "Check the address and the publisher; the message names what the request met.", "D-59"),
    _reg("PROBE_MEDIA_TYPE", "validate --probe: the first listing answered with a media type its discovery kind does not accept.",
         "Point discovery.url at the listing itself, or choose the discovery kind that reads this type.", "D-59", "DISC-28", "DISC-29", "DISC-30", "DISC-31"),
    _reg("PROBE_RECORDS_NOT_ARRAY", "validate --probe: the first listing is not the declared shape (the records pointer names no array, or the root is not a sitemap).",
         "Correct records.pointer (RFC 6901; \"\" is the whole body).", "D-59", "REG-36", "D-13"),
    _reg("PROBE_NO_LINKS", "validate --probe: the first listing was read but yielded no usable link (its records were dropped, or it held none), so a run would discover nothing.",
         "Run `collection discover RECIPE SAVED_LISTING` on a saved copy: check that records.selector matches the <a> (or link.pointer names the link inside each record).", "D-59", "D-27"),
    _reg("DATASET_DUPLICATE_SOURCE_NAME", "Two sources of the dataset share one name.", "Give each source its own name.", "REG-05"),
    # --- the dataset's tables (the transform), document-level rules (D-69, D-70) -----------
    _reg("TABLE_DUPLICATE_NAME", "Two tables of the dataset share one name.",
         "Give each table its own name.", "D-69", "D-70"),
    _reg("TABLE_NAME_IS_SOURCE",
         "A table has the name of one of the dataset's sources; in the SQL that name means the source, and the build writes both.",
         "Rename the table (e.g. council_decisions_typed for the source council_decisions).", "D-69", "D-70"),
    _reg("TABLE_DUPLICATE_COLUMN",
         "A table declares two columns whose names are equal ignoring case; DuckDB compares identifiers case-insensitively, so the result could not hold both.",
         "Give each column its own name, and alias the select item to it: `... as page_ordinal_text`.", "D-69", "D-70"),
    _reg("TABLE_SOURCE_NOT_COLLECTION",
         "A table reads a source that is not a collection: only a collection's relation has known columns (its Reader's columns, then the seven provenance columns), so the SELECT cannot be checked or built.",
         "Read only collection sources (adapter public.https.collection@2.0.0), or drop the source from the SELECT.", "D-70", "PROV-02"),
    # --- a table's SQL, checked without data (issue 25; D-67, D-68) ----------------------
    _reg("TRANSFORM_SQL_SYNTAX", "A table's SQL is not valid SQL (an unclosed string or comment, a missing keyword, a stray character).",
         "Fix the SQL at the line and column given (lines and columns count inside the SQL text).", "D-68"),
    _reg("TRANSFORM_SQL_NOT_ONE_SELECT",
         "A table's SQL is not exactly one SELECT: it is empty, holds a second statement, or is another statement (CREATE, INSERT, COPY, ATTACH, DETACH, PRAGMA, INSTALL, LOAD, SET, CALL, EXPORT, IMPORT, …).",
         "Write one SELECT (optionally starting WITH) over the dataset's sources; a trailing `;` is allowed.", "D-68"),
    _reg("TRANSFORM_SQL_FORBIDDEN",
         "A table's SQL reads outside the dataset: a table function (read_csv, read_parquet, read_json, glob, query, …), a function that reads files, the network or the environment (read_text, read_blob, getenv, duckdb_*, pragma_*, …), or a string used as a table (`from '/etc/passwd'`).",
         "Read only the dataset's sources, by their names, as tables.", "D-68"),
    _reg("TRANSFORM_SQL_UNKNOWN_TABLE", "A table's SQL reads a table that is not a source of the dataset (nor a WITH query of the statement).",
         "Use the name of one of the dataset's sources (the message lists them).", "D-68"),
    _reg("TRANSFORM_SQL_UNKNOWN_COLUMN",
         "A table's SQL names a column that none of the tables it reads has, or an unqualified name that two of them have.",
         "Use one of the columns the message lists (the pinned Reader's columns, then the seven provenance columns), qualified by its table when two tables share it.",
         "D-68", "PROV-16"),
    _reg("TRANSFORM_SQL_UNSUPPORTED",
         "A table's SQL uses a construct outside the typed subset that validate checks without an engine (docs/transform.md lists the subset); build refuses the same SQL.",
         "Rewrite that construct with what the subset offers; the message names the construct and its position.", "D-68"),
    _reg("TRANSFORM_SQL_TYPE_ERROR",
         "A table's SQL applies an operator or function to types it does not take (arithmetic or sum() on VARCHAR, lower() of a number, mixing VARCHAR and a number in COALESCE or CASE), which DuckDB would refuse too.",
         "Cast the operand first, e.g. cast(page_ordinal as integer) + 1.", "D-68", "PROV-16", "PROV-17"),
    _reg("TRANSFORM_SQL_AGGREGATE",
         "A table's SQL mixes aggregates and plain columns wrongly: a column outside GROUP BY and outside every aggregate, an aggregate inside an aggregate, or an aggregate in WHERE or GROUP BY.",
         "Add the column to GROUP BY, or wrap it in an aggregate (min, max, any_value).", "D-68"),
    _reg("TRANSFORM_SQL_UNNAMED_COLUMN",
         "A select item that is not a plain column has no name (AS), so the table's column name would be DuckDB's rendering of the expression.",
         "Name it: `<expression> as <declared name>`.", "D-68"),
    _reg("TRANSFORM_COLUMN_NAMES_DIFFER",
         "The SELECT's result columns are not the declared columns: a different number of columns, or a different name at some position (names compare case-insensitively, in order).",
         "Make the select list and `columns` agree, in the same order; the message gives both lists.", "D-68"),
    # --- run-level refusals ------------------------------------------------------------
    _run("COLLECTION_DISCOVERY_FAILED",
         "Listing the collection failed and the run has nothing to continue from (no predecessor ledger, no explicit members, no address listed before the refusal). Nothing was written.",
         "Read discovery_failure, fix the listing or its address, and run again.", "REF-03", "REF-04"),
    _run("COLLECTION_MERGE_INVALID",
         "The run and its predecessor contradict each other: the stored relation's columns or the ledger's header are not what this run expects, or a discovery body is not the declared shape.",
         "Run with --resync if the recipe's Reader pin changed on purpose; otherwise fix the recipe's records pointer.", "REF-05", "REF-06", "REF-07", "D-12", "D-13"),
    _run("RESYNC_REQUIRED", "The action plan carries a schedule; a collection has no scheduled refresh.",
         "Remove the schedule and run (or run --resync) explicitly.", "OPS-01", "OPS-02", "OPS-03", "D-61"),
    _run("TRANSFORM_COLUMN_TYPE_MISMATCH",
         "A table's column has an engine type its declared type does not take: a provenance or Reader column selected bare (every column arrives as VARCHAR) into a column declared other than string, a cast to plain timestamp into a timestamp column (only TIMESTAMP WITH TIME ZONE fits), sum() of integers (HUGEINT) into an integer column, or an untyped NULL. validate reports it without data; build refuses it before any row is written.",
         "Cast it: cast(page_ordinal as integer), cast(page_fetched_at as timestamp with time zone); the message gives the corrected select item.", "REF-08", "PROV-18", "PROV-20", "D-49", "D-67"),
    # --- `collection build` (issue 25; D-71, D-72) --------------------------------------
    _run("BUILD_NO_TABLES", "The dataset document declares no `tables`, so there is nothing to build.",
         "Add `tables` to the dataset document (docs/transform.md); `collection validate` checks them.", "D-69", "D-71"),
    _run("BUILD_NO_STATE",
         "A table reads a source that has no current generation in the state directory yet (it never ran there), so there is no relation to read. Nothing was written.",
         "Run the source first: `collection run DATASET --state DIR --only NAME` (the message names the source and the command), then build.", "D-71"),
    _run("BUILD_RELATION_COLUMNS",
         "A source's current relation does not have the columns its Reader pin gives (the pin changed since the run that wrote it, or the relation's header is damaged), so its columns would be misnamed. Nothing was written.",
         "Run the source again (`--resync` after a pin change) so its relation has the pin's columns, then build.", "PROV-02", "REF-05", "D-71"),
    _run("BUILD_SQL_REFUSED",
         "DuckDB itself refused a table's SQL before any row was written: not exactly one SELECT by DuckDB's own parser, a binder or catalogue error, or an access the build's sandbox forbids (a file, the network, an extension, a setting; D-72). validate's checks normally refuse such SQL first. Nothing was written.",
         "Read DuckDB's message in the refusal (it names the table); the SQL may read only the dataset's sources, as tables (docs/transform.md).", "D-68", "D-72"),
    _run("BUILD_ROWS_FAILED",
         "A table's SQL failed on the data while DuckDB ran it (a cast of 'abc' to integer, a date that does not parse, out of memory): the types were right, a row was not. The message names the table and carries DuckDB's message. Nothing was written; the previous build is unchanged.",
         "Fix the SQL for the rows DuckDB names: try_cast(x as integer) gives NULL where a cast fails, or filter the rows out in WHERE; for memory, raise --memory-limit.", "D-71", "D-72"),
    _run("BUILD_DEADLINE", "The build passed --deadline and was interrupted. Nothing was written; the previous build is unchanged.",
         "Raise --deadline, or build fewer or smaller tables.", "D-72"),
    _run("STATE_LOCKED", "Another run holds the state directory's lock.",
         "Wait for that run to finish; a lock left by a killed run is cleared automatically."),
    _run("FIXTURE_TOO_LARGE",
         "The --replay fixture, or what its gzip stream decompresses to, is larger than this process reads "
         "(1 GiB, or 1/8 of an address-space limit such as ulimit -v), or reading it ran out of memory: a gzip "
         "bomb, or a corpus too large for the memory the run may use. Nothing was requested or written.",
         "Check that the right file was given; split a large corpus, or raise the memory limit."),
    _run("INTERNAL_ERROR",
         "The command met an error nobody planned for (a bug). It exits 70 with this code and one line naming the error, never a traceback; a run that ends this way leaves the previous generation current.",
         "Report the line with the command that gave it.", "REF-04"),
    _run("STATE_DAMAGED",
         "The state directory is not as a run left it: `current` is not a symlink to a generation (a real directory, dangling, a loop), a generation file is missing or not a regular file (a FIFO), or run.json is truncated or lacks a member; or a dataset directory's DIR/dataset-run.json is not a dataset record (not UTF-8, not JSON, or not of the shape schemas/dataset-run-record.schema.json gives). The message names the file and what is wrong.",
         "Run with --resync (a dataset: --only NAME --resync for the damaged source): the damaged generation is set aside under DIR/set-aside/ (never deleted) and a fresh run starts. A damaged dataset-run.json needs nothing: the next dataset run sets it aside under DIR/set-aside/ and starts a new record.",
         "MERGE-01", "REF-04"),
    _run("GATE_UNAVAILABLE",
         "The politeness gate shared with other runs (the machine-local directory, or Redis with --gate redis://…) could not be read or written, or is not safe to trust (a local gate directory or record that is a symlink, a FIFO, another user's, writable by others), or answered something the tool never writes (a value of the wrong type, not finite or out of range, a key of the wrong type), before the first request or during the run. Nothing is blamed on the publisher. When no page was fetched nothing was written and the previous generation is unchanged; when pages were fetched before the fault, a generation was written with them (its record names `gate_failure`; the pages not reached stay pending). The message says how many requests were made.",
         "Make the gate reachable (start Redis, fix the URL or the directory's permissions; delete a damaged record, the message names its key) and run again; use --gate none only for a run you know is alone.",
         "FETCH-16", "FETCH-18", "FETCH-19"),
    # --- page failures (D-45, D-62) ----------------------------------------------------
    _page("timeout", ERROR, "The attempt passed request_timeout_seconds.", "Check the origin's speed; retries follow D-08.", "FETCH-20", "D-11"),
    _page("connection_error", ERROR, "The connection failed or was reset.", "Check that the origin is reachable.", "D-62"),
    _page("tls_error", ERROR, "The TLS handshake failed (untrusted certificate, name mismatch).", "Check the origin's certificate.", "D-62"),
    _page("media_type_refused", ERROR, "The page answered with a media type the pinned Reader family does not take.",
          "Check the page, or pin a family that reads this type.", "READ-06", "D-37"),
    _page("decode_error", ERROR, "The pinned Reader could not decode the page.", "Try the page with `collection decode`.", "READ-10", "MERGE-21"),
    _page("column_mismatch", ERROR, "The page decoded to columns other than the pin's.", "Check the Reader options against the page.", "READ-09", "MERGE-22"),
    _page("story_not_found", ERROR,
          "html.web_extract found no story on a page that shows text: only navigation, headings, link lists or boilerplate.",
          "Try the page with `collection decode`; if it has a story, name it with a `story` selector.", "READ-10", "MERGE-21"),
    _page("page_too_deep", ERROR, "The page nests elements deeper than the HTML parser reads (2048 levels), so part of it would be lost.",
          "Check the page; no real page nests that deep.", "READ-10", "MERGE-21"),
    _page("robots_disallowed", BLOCKED, "robots.txt disallows this address for our product token; no request was made.",
          "Ask the origin's operator, or remove the page from the recipe.", "FETCH-22", "FETCH-23", "D-48"),
    _page("max_source_bytes", ERROR, "Fetching the page would pass limits.max_source_bytes.", "Raise limits.max_source_bytes.", "FETCH-14", "D-20"),
    _page("too_many_redirects", ERROR, "The page redirected more than 5 times, or in a loop.", "Check the page's address.", "D-25"),
    _page("body_incomplete", ERROR, "The body ended before its declared length, or its content encoding was broken.",
          "Check the origin.", "D-62"),
    _page("body_too_large", ERROR, "The decoded body passed the fetcher's per-body memory cap (32 MiB by default).",
          "Check the page; a Reader page that large is not a web page.", "D-20"),
    _page("egress_refused", BLOCKED, "The address resolved to a private, loopback or otherwise unroutable network.",
          "Map the host explicitly with --resolve if this is intended.", "URL-17", "URL-18"),
    _page("replay_missing", ERROR, "The replay fixture holds no exchange for this request.",
          "Record the fixture again, or add the exchange.", ),
    _page("skipped_origin", BLOCKED, "The address (or the place a redirect landed) is not https or not in allowed_origins; it is never fetched.",
          "Add the origin to allowed_origins if it belongs to the corpus.", "URL-09", "URL-10", "URL-13", "D-26"),
    _page("http_status_invalid", ERROR, "The answer carried no usable HTTP status.", "Check the origin.", "D-62"),
    _page("content_encoding_refused", ERROR,
          "The body came in a content encoding the fetcher did not ask for (only gzip and deflate are asked for), so its bytes cannot be trusted as the page.",
          "Ask the origin's operator to honour Accept-Encoding.", "D-30", "D-62"),
    _page("partial_content_refused", ERROR,
          "The origin answered 206 Partial Content to a request that asked for no range: the body is not the whole page.",
          "Check the origin; the page is retried on the next run.", "FETCH-25", "D-62"),
    _page("internal_error", ERROR,
          "Handling this page raised an unexpected error; the page failed and is retried on the next run.",
          "Report it with the run's log; nothing else in the run was affected.", "REF-13"),
    _page("waf_challenge", BLOCKED, "The origin answered with a bot challenge instead of the page.", "Ask the origin's operator.", "D-62"),
]

CATALOGUE: dict[str, Code] = {entry.code: entry for entry in _ENTRIES}

# Page failures the pinned Reader gives the same body every time (issue 24 point 9): running
# again cannot help; the recipe (or the Reader pin) must change. `collection decode` replays
# them on a kept body.
DECODE_FAILURES = frozenset({"decode_error", "column_mismatch", "story_not_found", "page_too_deep",
                             "media_type_refused"})

# Any three-digit status a server can send names a code: http.client accepts 100-999 on the
# status line, and publishers do answer outside RFC 9110's 100-599 (LinkedIn answers crawlers
# with 999). Anything else a transport could report is `http_status_invalid`.
_HTTP_STATUS = re.compile(r"http_status_([1-9][0-9][0-9])\Z")


def http_status_code(status: int) -> str:
    if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 999:
        return f"http_status_{status}"
    return "http_status_invalid"


def liveness_for_status(status: int) -> str:
    if status in (404, 410):
        return GONE
    if status in (401, 403, 429):
        return BLOCKED
    return ERROR


def lookup(code: str) -> Code | None:
    """The catalogue entry for `code`, including the open family `http_status_<nnn>`."""
    if code in CATALOGUE:
        return CATALOGUE[code]
    match = _HTTP_STATUS.match(code)
    if match:
        status = int(match.group(1))
        return Code(code, PAGE, f"The page answered HTTP {status}.",
                    "Check the address; the page keeps its previous rows and is retried on the next run.",
                    ("D-45", "D-53", "D-62"), liveness_for_status(status))
    return None


def lookup_any_case(text: str) -> list[Code]:
    """The entries `text` names in any case (`explain` takes what an operator types): the
    exact code when there is one, else every code equal to it case-folded — two for
    `Internal_Error`, the run's INTERNAL_ERROR and the page's internal_error."""
    text = text.strip()
    exact = lookup(text)
    if exact is not None:
        return [exact]
    folded = text.casefold()
    found = [entry for code, entry in CATALOGUE.items() if code.casefold() == folded]
    if not found and (entry := lookup(folded)) is not None:
        found = [entry]                      # HTTP_STATUS_404
    return sorted(found, key=lambda e: e.code)


def liveness(code: str) -> str:
    entry = lookup(code)
    if entry is None or entry.liveness is None:
        raise KeyError(f"not a page failure code: {code}")
    return entry.liveness
