// Lists that page with the API's cursor (``next_after``): the first page, then "Show more"
// appends the next one, so a list of ten thousand stays as fast as its first hundred.
import * as api from "./api.js";
import { h } from "./dom.js";

const PAGE = 100;

/** pager(path, key, filters, render) — ``render(records, append)`` draws a page; ``reload()``
 * starts again from the newest; ``element`` is the "Show more" control. */
export function pager(path, key, filters, render) {
  let after = null;
  const button = h("button", { type: "button", class: "more", hidden: true }, "Show more");
  const element = h("p", { class: "paging" }, button);
  async function load(append) {
    const params = { ...filters(), limit: PAGE };
    if (append && after) params.after = after;
    const found = await api.get(path, params);
    render(found[key], append);
    after = found.next_after;
    button.hidden = !after;
  }
  button.addEventListener("click", () => load(true));
  return { element, reload: () => load(false) };
}
