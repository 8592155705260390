// The activity chart: plain SVG, one stacked bar a day, colours from the
// stylesheet (so light and dark both read), a title per bar for pointers and
// a summary for screen readers, which also get the table beside it.
const SVG = "http://www.w3.org/2000/svg";
const SERIES = [
  ["added", "Added"],
  ["removed", "Removed"],
  ["expired", "Expired"],
  ["refused", "Refused"],
];
const WIDTH = 600;
const HEIGHT = 120;
const AXIS = 18;

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

/** The chart of `days` (oldest first), with its legend. */
export function activityChart(days) {
  const total = (day) => SERIES.reduce((sum, [key]) => sum + day[key], 0);
  const peak = Math.max(1, ...days.map(total));
  const step = WIDTH / Math.max(1, days.length);
  const scale = (HEIGHT - AXIS) / peak;
  const sums = Object.fromEntries(SERIES.map(([key]) => [key, days.reduce((sum, day) => sum + day[key], 0)]));
  const summary = `${days.length} days from ${days[0]?.date ?? ""} to ${days.at(-1)?.date ?? ""}: ` +
    SERIES.map(([key, label]) => `${sums[key]} ${label.toLowerCase()}`).join(", ") + `; busiest day ${peak}.`;
  const bars = days.map((day, index) => {
    let top = HEIGHT - AXIS;
    const parts = SERIES.filter(([key]) => day[key] > 0).map(([key]) => {
      const height = day[key] * scale;
      top -= height;
      return svg("rect", { class: `bar ${key}`, x: index * step + 1, y: top, width: Math.max(1, step - 2), height });
    });
    const detail = SERIES.map(([key, label]) => `${label} ${day[key]}`).join(", ");
    return svg("g", {}, svg("title", {}, `${day.date}: ${detail}`), ...parts);
  });
  const label = (x, text, anchor) => svg("text", { class: "axis", x, y: HEIGHT - 4, "text-anchor": anchor }, text);
  const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": summary, class: "chart" },
    svg("line", { class: "baseline", x1: 0, x2: WIDTH, y1: HEIGHT - AXIS, y2: HEIGHT - AXIS }),
    ...bars,
    label(0, days[0]?.date ?? "", "start"),
    label(WIDTH, days.at(-1)?.date ?? "", "end"));
  const legend = document.createElement("ul");
  legend.className = "legend";
  for (const [key, label] of SERIES) {
    const item = document.createElement("li");
    item.append(svg("svg", { viewBox: "0 0 10 10", class: "swatch", "aria-hidden": "true" }, svg("rect", { class: `bar ${key}`, width: 10, height: 10 })), `${label}: ${sums[key]}`);
    legend.append(item);
  }
  const figure = document.createElement("figure");
  figure.className = "activity";
  figure.append(chart, legend);
  return figure;
}
