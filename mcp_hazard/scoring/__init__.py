"""Score traces: per-episode verdicts, aggregates with intervals, and reports."""

from mcp_hazard.scoring.aggregate import REPORT_SCHEMA_VERSION, aggregate
from mcp_hazard.scoring.collect import score_traces
from mcp_hazard.scoring.episode_score import EpisodeScore, score_episode

__all__ = ["REPORT_SCHEMA_VERSION", "EpisodeScore", "aggregate", "score_episode", "score_traces"]
