// Tokens and cost as a person reads them (docs/usage.md §5), the same words as `dsh-query usage`:
// a count never recorded is "-" (never 0), a cost without a price is "no price", and a total that
// leaves unpriced responses out is marked "*". No DOM here, so node --test runs it.

import type { UsageTotals } from "../../protocol.gen";

/** A count in a few characters: 1633, 12.3k, 4.5M; "-" for one never recorded. */
export function compact(n: number | null | undefined): string {
  if (typeof n !== "number") {
    return "-";
  }
  if (n < 10_000) {
    return String(n);
  }
  for (const [size, unit] of [
    [1e9, "G"],
    [1e6, "M"],
    [1e3, "k"],
  ] as const) {
    if (n >= size) {
      return `${(n / size).toFixed(1)}${unit}`;
    }
  }
  return String(n);
}

/** The exact decimal dollars of the server, shown to the cent (or to 4 places under $1). */
export function dollars(total: Pick<UsageTotals, "costUsd" | "unpricedResponses">): string {
  if (total.costUsd === null) {
    return total.unpricedResponses ? "no price" : "-";
  }
  const value = Number(total.costUsd);
  let text =
    value >= 1
      ? `$${value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`
      : `$${value.toFixed(4).replace(/0+$/, "").replace(/\.$/, "")}`;
  if (text === "$0" && value > 0) {
    text = "<$0.0001";
  }
  return total.unpricedResponses ? `${text}*` : text;
}

/** Every recorded token: the prompt's three parts and the output. */
export function tokens(total: UsageTotals): number {
  return (total.input ?? 0) + (total.cacheRead ?? 0) + (total.cacheWrite ?? 0) + (total.output ?? 0);
}

/** The session view's header line. */
export function usageLine(total: UsageTotals, prices: string): string {
  const parts = [
    `${total.responses} ${total.responses === 1 ? "response" : "responses"}`,
    `input ${compact(total.input)}`,
    `cache read ${compact(total.cacheRead)}`,
    `cache write ${compact(total.cacheWrite)}`,
    `output ${compact(total.output)}`,
    `cost ${dollars(total)} (estimate, ${prices})`,
  ];
  let line = `Usage: ${parts.join(" · ")}`;
  if (total.unpricedResponses) {
    line += ` · * ${total.unpricedResponses} without a price (${total.unpricedModels.join(", ")})`;
  }
  return line;
}
