"""legalsat's one settings object: environment variables `LEGALSAT_*`, then command-line flags.

Nothing else in the package reads the environment; components receive a `Settings`.
"""

from __future__ import annotations

import os

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every tunable, with its default. Flags passed to `get_settings` override the environment."""

    model_config = SettingsConfigDict(env_prefix="LEGALSAT_", extra="ignore", frozen=True)

    target: str = Field("sm90", description="default hardware target (sm90, sm100, gfx942)")
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1,
                         description="worker processes for CPU-bound work (default: all cores)")
    max_body_bytes: int = Field(1 << 20, ge=1024,
                                description="largest request body / JSON line accepted, bytes")


def get_settings(**overrides: object) -> Settings:
    """Settings from the environment, with non-None `overrides` (command-line flags) on top."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
