"""Every source format of the real corpus, by the name the manifest gives it."""

from __future__ import annotations

from pos_trapbench.real import chatlogs, coding, consoles, notebooks, openhands, textgames
from pos_trapbench.real.steps import Converter, RealTrajectory

CONVERTERS: dict[str, Converter] = {
    # text games
    "react_webshop_ipynb": textgames.convert_react_webshop_ipynb,
    "adapt_results": textgames.convert_adapt_results,
    "balrog_csv": textgames.convert_balrog_csv,
    "zorkgpt_episode_txt": textgames.convert_zorkgpt_episode_txt,
    "react_alfworld_actobs_ipynb": textgames.convert_react_alfworld_actobs_ipynb,
    "llm_action_ipynb": textgames.convert_llm_action_ipynb,
    # coding agents
    "swe_agent_traj": coding.convert_swe_agent_traj,
    "mini_swe_agent_traj": coding.convert_mini_swe_agent_traj,
    "acr_conversation": coding.convert_acr_conversation,
    "openhands_output_jsonl": openhands.convert_openhands_output_jsonl,
    # structured tool-agent logs
    "tau_bench": chatlogs.convert_tau_bench,
    "toolbench_dfs": chatlogs.convert_toolbench_dfs,
    "cline_api": chatlogs.convert_cline_api,
    # notebook outputs
    "autogen_notebook": notebooks.convert_autogen_notebook,
    "langgraph_notebook": notebooks.convert_langgraph_notebook,
    "webvoyager_notebook": notebooks.convert_webvoyager_notebook,
    # console text
    "claude_code_transcript": consoles.convert_claude_code_transcript,
    "smolagents_console": consoles.convert_smolagents_console,
    "autogpt_console": consoles.convert_autogpt_console,
    "browser_use_log": consoles.convert_browser_use_log,
    "gemini_cli_screen": consoles.convert_gemini_cli_screen,
}


def convert(format_name: str, text: str) -> list[RealTrajectory]:
    """The trajectories in one source file of the given format (none for an unknown one)."""
    converter = CONVERTERS.get(format_name)
    return converter(text) if converter is not None else []
