// Draws a run's compiled graph as SVG from the server's layout, the current state highlighted
// and the states the run went through marked. Built element by element (no markup parsing).
import { s } from "./dom.js";

export function draw(graph, current, trail) {
  const visited = new Set(trail || []);
  const width = Math.max(graph.width, 200);
  const svg = s("svg", { viewBox: `0 0 ${width} ${graph.height}`, width, height: graph.height,
    class: "graph", role: "img",
    "aria-labelledby": "graph-title" },
    s("title", { id: "graph-title" }, `State graph; current state: ${current || "none"}`),
    s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5",
      markerWidth: "9", markerHeight: "9", markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" },
    s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }))));
  for (const edge of graph.edges) {
    const taken = visited.has(edge.from) && (visited.has(edge.to) || edge.to === current);
    svg.append(s("g", { class: `edge${edge.back ? " back" : ""}${taken ? " taken" : ""}` },
      s("path", { d: edge.path, "marker-end": "url(#arrow)" }),
      edge.label ? s("text", { x: edge.label_x, y: edge.label_y, class: "edge-label",
        "text-anchor": edge.anchor }, s("title", {}, edge.label), edge.short_label) : null));
  }
  for (const node of graph.nodes) {
    const classes = ["node", `kind-${node.kind.replace(/[^a-z_]/g, "")}`];
    if (node.name === current) classes.push("current");
    else if (visited.has(node.name)) classes.push("visited");
    const group = s("g", { class: classes.join(" "), dataset: { state: node.name },
      "aria-current": node.name === current ? "step" : null },
      s("rect", { x: node.x, y: node.y, width: node.width, height: node.height, rx: 8 }));
    node.lines.forEach((line, index) => {
      group.append(s("text", { x: node.x + node.width / 2, y: node.y + 20 + index * 18,
        class: index === 0 ? "node-name" : "node-line" }, line));
    });
    if (node.name === current) {
      group.append(s("text", { x: node.x + node.width - 8, y: node.y - 6, class: "here" }, "▼ now"));
    }
    svg.append(group);
  }
  return svg;
}
