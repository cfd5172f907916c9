"""Analysis of run outputs: metrics from Batsim's export files (reports and plots build on them)."""

from .metrics import (
    JOBS_COLUMNS,
    JobRecords,
    JobsTable,
    compute_metrics,
    cumulative_bsld,
    format_metrics,
    merge_attempts,
    per_job_bsld,
    read_jobs_csv,
    read_schedule,
    read_schedule_csv,
    schedule_csv_for,
    schedule_file_for,
)

__all__ = [
    "JOBS_COLUMNS",
    "JobRecords",
    "JobsTable",
    "compute_metrics",
    "cumulative_bsld",
    "format_metrics",
    "merge_attempts",
    "per_job_bsld",
    "read_jobs_csv",
    "read_schedule",
    "read_schedule_csv",
    "schedule_csv_for",
    "schedule_file_for",
]
