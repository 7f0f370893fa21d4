"""The LLM planner (issue 9, section 3): autogen-agentchat agents over an OpenAI-compatible
model that read the cluster through bounded read tools and answer with a validated diagnosis
and ranked catalog actions. ``planner_from_env`` returns None when no model is configured.
"""

from agents.llm.planner import LLMPlanner, planner_from_env

__all__ = ["LLMPlanner", "planner_from_env"]
