// How the Sessions view groups the corpus: none, by agent, or by workspace (cwd). The server
// computes the groups (server/tree/groups.py); the client only asks for a grouping with
// `args.groupBy` on the roots request, and every node id of a grouped tree carries it, so the
// ungrouped tree keeps its ids. Pure: the caller passes a reader over the configuration.

import type { TreeGrouping } from "./protocol";
import type { ConfigReader } from "./settings";
import type { TreeTarget } from "./tree";

export const GROUPING_SETTING = "dshQuery.sessions.groupBy";
export const GROUPINGS: readonly TreeGrouping[] = ["none", "agent", "workspace"];

export const GROUPING_LABELS: Record<TreeGrouping, { label: string; detail: string; description: string }> = {
  none: { label: "None", detail: "All sessions, newest first", description: "" },
  agent: { label: "Agent", detail: "Each agent's sessions apart (Claude Code, Codex, Gemini CLI, …, dsh)", description: "by agent" },
  workspace: { label: "Workspace", detail: "One group per working directory (cwd)", description: "by workspace" },
};

export function isGrouping(value: unknown): value is TreeGrouping {
  return typeof value === "string" && (GROUPINGS as readonly string[]).includes(value);
}

/** `dshQuery.sessions.groupBy` (read as `sessions.groupBy` in the `dshQuery` section); anything else is none. */
export function readGrouping(cfg: ConfigReader): TreeGrouping {
  const value = cfg.get<unknown>("sessions.groupBy");
  return isGrouping(value) ? value : "none";
}

/** The Sessions view's tree: the plain corpus for none (no args: the ids it always had). */
export function sessionsTarget(grouping: TreeGrouping): TreeTarget {
  return grouping === "none" ? { view: "sessions" } : { view: "sessions", args: { groupBy: grouping } };
}

/** The Sessions view's description ("by agent"), undefined when ungrouped. */
export function groupingDescription(grouping: TreeGrouping): string | undefined {
  return GROUPING_LABELS[grouping].description || undefined;
}
