"""Baselines of the papers: EnvPipe (and its scheduler), ZeusGlobal and ZeusPerStage."""
