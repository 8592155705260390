// Bar charts in plain SVG: one stacked bar an item, colours from the
// stylesheet (so light and dark both read), a title per bar for pointers and
// a summary for screen readers, which also get the table beside each chart;
// and what a CrowdSec bouncer reports of itself, with its chart.
import { el, when } from "./ui.js";

const SVG = "http://www.w3.org/2000/svg";
const ACTIVITY = [
  ["added", "Added"],
  ["removed", "Removed"],
  ["expired", "Expired"],
  ["refused", "Refused"],
];
const WIDTH = 600;
const HEIGHT = 120;
const AXIS = 18;
/** Bars a chart has room for: 30 days, or a list's last 30 changes. Fewer
 *  stand at the right, as wide as a full chart's, newest last. */
const SLOTS = 30;

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

/** Bars of `items`, each stacking its `series` counts; `label(item)` names one
 *  (in its title and under the first and last bars), `summary` is what a screen
 *  reader hears. With its legend of each series' total, when there is more than one. */
function barChart(items, series, label, summary) {
  const total = (item) => series.reduce((sum, [key]) => sum + item[key], 0);
  const peak = Math.max(1, ...items.map(total));
  const step = WIDTH / Math.max(SLOTS, items.length);
  const left = WIDTH - step * items.length;
  const scale = (HEIGHT - AXIS) / peak;
  const bars = items.map((item, index) => {
    let top = HEIGHT - AXIS;
    const parts = series.filter(([key]) => item[key] > 0).map(([key]) => {
      const height = item[key] * scale;
      top -= height;
      return svg("rect", { class: `bar ${key}`, x: left + index * step + 1, y: top, width: Math.max(1, step - 2), height });
    });
    const detail = series.map(([key, name]) => `${name} ${item[key].toLocaleString()}`).join(", ");
    return svg("g", {}, svg("title", {}, `${label(item)}: ${detail}`), ...parts);
  });
  const axis = (x, text, anchor) => svg("text", { class: "axis", x, y: HEIGHT - 4, "text-anchor": anchor }, text);
  const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": summary, class: "chart" },
    svg("line", { class: "baseline", x1: 0, x2: WIDTH, y1: HEIGHT - AXIS, y2: HEIGHT - AXIS }),
    ...bars,
    // The first bar's name under it, where there is room beside the last one's.
    left <= WIDTH / 2 && items.length ? axis(left, label(items[0]), "start") : "",
    axis(WIDTH, items.length ? label(items.at(-1)) : "", "end"));
  const figure = document.createElement("figure");
  figure.className = "activity";
  figure.append(chart);
  if (series.length > 1) {
    const legend = document.createElement("ul");
    legend.className = "legend";
    for (const [key, name] of series) {
      const item = document.createElement("li");
      const sum = items.reduce((acc, it) => acc + it[key], 0);
      item.append(svg("svg", { viewBox: "0 0 10 10", class: "swatch", "aria-hidden": "true" }, svg("rect", { class: `bar ${key}`, width: 10, height: 10 })), `${name}: ${sum}`);
      legend.append(item);
    }
    figure.append(legend);
  }
  return figure;
}

/** A holder's last days (oldest first): adds, removes, expiries and refusals a day. */
export function activityChart(days) {
  const sums = ACTIVITY.map(([key, name]) => `${days.reduce((sum, day) => sum + day[key], 0)} ${name.toLowerCase()}`);
  const peak = Math.max(0, ...days.map((day) => ACTIVITY.reduce((sum, [key]) => sum + day[key], 0)));
  const summary = `${days.length} days from ${days[0]?.date ?? ""} to ${days.at(-1)?.date ?? ""}: ${sums.join(", ")}; busiest day ${Math.max(1, peak)}.`;
  return barChart(days, ACTIVITY, (day) => day.date, summary);
}

/** A list's size after each of its last changes (oldest first), each named by its time. */
export function sizeChart(points) {
  const at = (point) => new Date(point.at).toLocaleString();
  const sizes = points.map((point) => point.entries);
  const summary = points.length
    ? `${points.length} ${points.length === 1 ? "change" : "changes"} from ${at(points[0])} to ${at(points.at(-1))}: from ${sizes[0].toLocaleString()} to ${sizes.at(-1).toLocaleString()} entries, at most ${Math.max(...sizes).toLocaleString()}.`
    : "No change yet.";
  return barChart(points, [["entries", "Entries"]], at, summary);
}

/** A count of bytes in the unit that reads best: "6.0 KiB". */
export function bytes(count) {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let unit = 0;
  let value = count;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${count.toLocaleString()} bytes` : `${value.toFixed(1)} ${units[unit]}`;
}

/** What a bouncer reported dropping each of its last days (oldest first): packets a day. */
export function usageChart(days) {
  const packets = days.reduce((sum, day) => sum + day.packets, 0);
  const dropped = days.reduce((sum, day) => sum + day.bytes, 0);
  const summary = `${days.length} days from ${days[0]?.date ?? ""} to ${days.at(-1)?.date ?? ""}: ${packets.toLocaleString()} packets (${bytes(dropped)}) dropped, as the bouncer reported them.`;
  const figure = barChart(days, [["packets", "Packets dropped"]], (day) => day.date, summary);
  figure.classList.add("usage");
  return figure;
}

/**
 * What a feed token's bouncer last reported of itself (CrowdSec's usage
 * metrics): its type and version, since when it runs, what its last report
 * said it dropped, and its last days as a chart; a dash before any report.
 * Every text is the bouncer's own, shown as text.
 */
export function bouncerUsage(usage) {
  if (!usage) return "—";
  const name = [usage.type ?? "A bouncer", usage.version].filter(Boolean).join(" ");
  const over = usage.windowSeconds ? ` in ${Math.round(usage.windowSeconds / 60)} min` : "";
  return [
    el("span", { class: "mono" }, name),
    el("br"),
    el("span", { class: "hint" }, usage.os ? `${usage.os}, ` : "", "started ", when(usage.startedAt)),
    el("br"),
    `Dropped ${usage.dropped.packets.toLocaleString()} packets (${bytes(usage.dropped.bytes)})${over}, reported `,
    when(usage.reportedAt),
    usageChart(usage.days),
  ];
}

/** What a machine's engine last reported of itself: its version, since when it runs, its data sources. */
export function engineUsage(usage) {
  if (!usage) return "—";
  return [
    el("span", { class: "mono" }, usage.version ?? "An engine"),
    el("br"),
    el("span", { class: "hint" }, usage.os ? `${usage.os}, ` : "", "started ", when(usage.startedAt),
      `, ${usage.datasources} ${usage.datasources === 1 ? "data source" : "data sources"}`),
  ];
}
