"""What each LOCA-Bench tool may do to the world: read it, write it, or submit the case.

LongHorizon-Harness's auditor must be read-only, so a tool's access is taken from metadata,
never guessed from its name. Two LOCA servers annotate their tools (MCP `readOnlyHint`): the
npm `filesystem` and `memory` servers; their entries below follow those annotations, and a test
checks them against what the servers declared. No other LOCA server annotates its tools, so each
of their tools is classified here by hand, after reading what it does in LOCA's checkout
(8cd474d): a tool is `read` only when no call of it can change the task's world (its databases,
files, accounts or sessions), whatever its name says. A query tool that also runs DML
(`bigquery_run_query`), a tool that writes a file to the workspace (`download_attachment`,
`extract_pdf_pages`, `storage_download_file`), a code runner (`python_execute`,
`run_command`) and a session change (`login`, `logout`) are `write`.

At run time the bridge passes each server's `readOnlyHint` on with the tool, and it wins over
the table (which follows it for the two servers that give one).

Tool names reach the agent as `<server>_<tool>` (LOCA's multi-server MCP client prefixes them)
with a `[<server>]` description prefix; `access` strips the prefix. A tool that is not listed
here (another checkout, a new server) is `write`: never offered to a read-only role.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

Access = Literal["read", "write", "submit"]

# Per server: the tools that only read. Every other tool of the server is listed in WRITE.
READ: dict[str, tuple[str, ...]] = {
    "calendar": ("get_event", "list_events"),
    "canvas": (
        "canvas_get_account",
        "canvas_get_account_reports",
        "canvas_get_assignment",
        "canvas_get_conversation",
        "canvas_get_course",
        "canvas_get_course_grades",
        "canvas_get_current_user",
        "canvas_get_dashboard",
        "canvas_get_dashboard_cards",
        "canvas_get_discussion_topic",
        "canvas_get_file",
        "canvas_get_module",
        "canvas_get_module_item",
        "canvas_get_page",
        "canvas_get_quiz",
        "canvas_get_quiz_questions",
        "canvas_get_rubric",
        "canvas_get_submission",
        "canvas_get_syllabus",
        "canvas_get_upcoming_assignments",
        "canvas_get_user_grades",
        "canvas_get_user_profile",
        "canvas_health_check",
        "canvas_list_account_courses",
        "canvas_list_account_users",
        "canvas_list_announcements",
        "canvas_list_assignments",
        "canvas_list_calendar_events",
        "canvas_list_conversations",
        "canvas_list_courses",
        "canvas_list_discussion_topics",
        "canvas_list_files",
        "canvas_list_folders",
        "canvas_list_module_items",
        "canvas_list_modules",
        "canvas_list_notifications",
        "canvas_list_pages",
        "canvas_list_quizzes",
        "canvas_list_rubrics",
        "canvas_list_sub_accounts",
        "canvas_list_users",
    ),
    "claim_done": (),
    "email": (
        "check_connection",
        "get_current_user",
        "get_drafts",
        "get_email_headers",
        "get_emails",
        "get_folders",
        "get_mailbox_stats",
        "get_unread_count",
        "list_users",
        "read_email",
        "search_emails",
    ),
    "excel": (
        "get_data_validation_info",
        "get_merged_cells",
        "get_workbook_metadata",
        "read_data_from_excel",
        "validate_excel_range",
        "validate_formula_syntax",
    ),
    # readOnlyHint: true (the server's annotations).
    "filesystem": (
        "directory_tree",
        "get_file_info",
        "list_allowed_directories",
        "list_directory",
        "list_directory_with_sizes",
        "read_file",
        "read_media_file",
        "read_multiple_files",
        "read_text_file",
        "search_files",
    ),
    "google_cloud": (
        "bigquery_get_dataset_info",
        "bigquery_list_datasets",
        "bigquery_list_jobs",
        "compute_get_instance",
        "compute_list_instances",
        "compute_list_zones",
        "compute_wait_for_operation",
        "logging_list_log_buckets",
        "logging_list_log_sinks",
        "logging_list_logs",
        "logging_read_logs",
        "storage_generate_signed_url",
        "storage_get_bucket_info",
        "storage_get_bucket_size",
        "storage_list_buckets",
        "storage_list_objects",
    ),
    "google_sheet": (
        "get_multiple_sheet_data",
        "get_multiple_spreadsheet_summary",
        "get_sheet_data",
        "get_sheet_formulas",
        "list_sheets",
        "list_spreadsheets",
    ),
    # readOnlyHint: true (the server's annotations).
    "memory": ("open_nodes", "read_graph", "search_nodes"),
    "pdf_tools": (
        "get_pdf_info",
        "read_pdf_pages",
        "search_pdf_content",
        "search_pdf_go_page",
        "search_pdf_info",
        "search_pdf_next_page",
        "search_pdf_prev_page",
    ),
    "python_execute": (),
    "snowflake": ("describe_table", "list_databases", "list_schemas", "list_tables", "read_query"),
    "terminal": ("show_security_rules",),
    "woocommerce": (
        "woo_coupons_get",
        "woo_coupons_list",
        "woo_customers_get",
        "woo_customers_list",
        "woo_orders_get",
        "woo_orders_list",
        "woo_payment_gateways_get",
        "woo_payment_gateways_list",
        "woo_products_categories_list",
        "woo_products_get",
        "woo_products_list",
        "woo_products_reviews_list",
        "woo_products_tags_list",
        "woo_products_variations_list",
        "woo_reports_customers",
        "woo_reports_low_stock",
        "woo_reports_orders",
        "woo_reports_products",
        "woo_reports_sales",
        "woo_reports_stock",
        "woo_reports_top_sellers",
        "woo_settings_get",
        "woo_settings_list",
        "woo_shipping_zone_methods_list",
        "woo_shipping_zones_get",
        "woo_shipping_zones_list",
        "woo_system_status",
        "woo_system_tools_list",
        "woo_tax_classes_list",
        "woo_tax_rates_get",
        "woo_tax_rates_list",
        "woo_webhooks_list",
    ),
}

# Per server: the tools that can change the world (or the session the other roles work in).
WRITE: dict[str, tuple[str, ...]] = {
    "calendar": ("create_event", "delete_event", "update_event"),
    "canvas": (
        "canvas_add_quiz_question",
        "canvas_create_account_report",
        "canvas_create_assignment",
        "canvas_create_conversation",
        "canvas_create_course",
        "canvas_create_module",
        "canvas_create_module_item",
        "canvas_create_quiz",
        "canvas_create_rubric",
        "canvas_create_user",
        "canvas_delete_quiz",
        "canvas_delete_quiz_question",
        "canvas_enroll_user",
        "canvas_login",
        "canvas_logout",
        "canvas_mark_module_item_complete",
        "canvas_post_to_discussion",
        "canvas_publish_quiz",
        "canvas_start_quiz_attempt",
        "canvas_submit_assignment",
        "canvas_submit_grade",
        "canvas_update_assignment",
        "canvas_update_course",
        "canvas_update_quiz",
        "canvas_update_quiz_question",
        "canvas_update_user_profile",
    ),
    "claim_done": (),
    "email": (
        "create_folder",
        "create_user",
        "delete_draft",
        "delete_email",
        "delete_emails",
        "delete_folder",
        "download_attachment",
        "export_emails",
        "forward_email",
        "import_emails",
        "login",
        "logout",
        "mark_emails",
        "move_email",
        "move_emails",
        "reply_email",
        "save_draft",
        "send_email",
        "update_draft",
    ),
    "excel": (
        "apply_formula",
        "copy_range",
        "copy_worksheet",
        "create_chart",
        "create_pivot_table",
        "create_table",
        "create_workbook",
        "create_worksheet",
        "delete_range",
        "delete_sheet_columns",
        "delete_sheet_rows",
        "delete_worksheet",
        "format_range",
        "insert_columns",
        "insert_rows",
        "merge_cells",
        "rename_worksheet",
        "unmerge_cells",
        "write_data_to_excel",
    ),
    # readOnlyHint: false (the server's annotations).
    "filesystem": ("create_directory", "edit_file", "move_file", "write_file"),
    "google_cloud": (
        "bigquery_cancel_job",
        "bigquery_create_dataset",
        "bigquery_export_table",
        "bigquery_load_csv_data",
        "bigquery_run_query",
        "compute_create_instance",
        "compute_delete_instance",
        "compute_restart_instance",
        "compute_start_instance",
        "compute_stop_instance",
        "logging_create_log_bucket",
        "logging_create_log_sink",
        "logging_delete_log",
        "logging_delete_log_sink",
        "logging_write_log",
        "storage_copy_object",
        "storage_create_bucket",
        "storage_delete_object",
        "storage_download_file",
        "storage_enable_versioning",
        "storage_move_object",
        "storage_set_bucket_lifecycle",
        "storage_upload_file",
    ),
    "google_sheet": (
        "add_columns",
        "add_rows",
        "batch_update_cells",
        "copy_sheet",
        "create_sheet",
        "create_spreadsheet",
        "rename_sheet",
        "share_spreadsheet",
        "update_cells",
    ),
    # readOnlyHint: false (the server's annotations).
    "memory": (
        "add_observations",
        "create_entities",
        "create_relations",
        "delete_entities",
        "delete_observations",
        "delete_relations",
    ),
    "pdf_tools": ("extract_pdf_pages", "merge_pdfs"),
    "python_execute": ("python_execute",),
    "snowflake": ("append_insight", "create_table", "write_query"),
    "terminal": ("run_command",),
    "woocommerce": (
        "woo_coupons_create",
        "woo_coupons_delete",
        "woo_coupons_update",
        "woo_customers_create",
        "woo_customers_update",
        "woo_orders_batch_update",
        "woo_orders_create",
        "woo_orders_delete",
        "woo_orders_notes_create",
        "woo_orders_refunds_create",
        "woo_orders_update",
        "woo_payment_gateways_update",
        "woo_products_batch_update",
        "woo_products_categories_create",
        "woo_products_create",
        "woo_products_delete",
        "woo_products_update",
        "woo_shipping_zone_methods_create",
        "woo_shipping_zones_create",
        "woo_shipping_zones_update",
        "woo_system_tools_run",
        "woo_tax_rates_create",
        "woo_webhooks_create",
    ),
}

# The case's submission: it runs the task's evaluator and ends the case.
SUBMIT: dict[str, tuple[str, ...]] = {"claim_done": ("claim_done",)}

ANNOTATED_SERVERS: frozenset[str] = frozenset({"filesystem", "memory"})
"""Servers whose tools carry MCP `readOnlyHint` annotations (the classification follows them)."""

_SERVER = re.compile(r"^\[([A-Za-z0-9_-]+)\]")


def server_access(server: str, tool: str) -> Access | None:
    """The access of `tool` (its own name, no prefix) on `server`; None when not classified."""
    for table, access in ((SUBMIT, "submit"), (READ, "read"), (WRITE, "write")):
        if tool in table.get(server, ()):
            return access  # type: ignore[return-value]
    return None


def access(name: str, description: str = "") -> Access:
    """The access of a tool as the agent sees it (`<server>_<tool>`, `[server] ...`);
    `write` for a tool this table does not know."""
    match = _SERVER.match(description.strip())
    servers = [match.group(1)] if match else sorted(READ, key=len, reverse=True)
    for server in servers:
        prefix = f"{server}_"
        if name.startswith(prefix):
            found = server_access(server, name[len(prefix) :])
            if found is not None:
                return found
    return "write"


def with_access(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's spec with the flags the LongHorizon roles read: `read_only` and `terminal`.
    A `read_only` the spec already has is the server's own `readOnlyHint` (the bridge passes
    it on) and wins; otherwise the table decides."""
    kind = access(str(tool.get("name", "")), str(tool.get("description", "")))
    hint = tool.get("read_only")
    read_only = hint if isinstance(hint, bool) and kind != "submit" else kind == "read"
    return {**tool, "read_only": read_only, "terminal": kind == "submit"}
