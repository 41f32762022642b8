"""Rewards for agents: tool calls (ToolRL), SQL execution, grounding boxes (VLM-R1) and GUI
actions (UI-R1). Each scores one turn; `scope: turns` applies it to every assistant turn of a
multi-turn trajectory (see `rewardsmith.turns`).
"""

from __future__ import annotations

from .boxes import detection, iou_reward
from .gui import gui_action
from .sql import sql
from .tools import tool_call

__all__ = ["detection", "gui_action", "iou_reward", "sql", "tool_call"]
