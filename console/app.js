// Batch Gateway console: one plain script, no framework, no build step (decision 0137).
// Everything the API answers is untrusted: it reaches the page through textContent (h() below) and nowhere else;
// no innerHTML, no inline script or style, no eval. The gateway key lives in this tab's sessionStorage only.
"use strict";

(function () {
  const KEY_ITEM = "batch-gateway.key";
  const ENDED = ["finished", "canceled", "expired", "failed"];
  const STATUSES = ["queued", "in_progress", "canceling", "finished", "canceled", "expired", "failed"];
  const PROVIDERS = ["anthropic", "openai", "bedrock", "google"];
  const EVENTS = [
    "batch.ended", "batch.status_changed", "batch.progress", "batch.replanned", "batch.queued", "batch.in_progress",
    "batch.canceling", "batch.finished", "batch.canceled", "batch.expired", "batch.failed",
  ];
  const REFRESH_MS = 2000; // a job that has not ended is read again this often
  const BODY_LIMIT = 3000000; // a create body is at most 3 MB (docs/api.md); larger files: the CLI uploads them
  const JOBS_PAGE = 20;
  const RESULTS_PAGE = 50;

  let config = null;
  let timer = null;
  let generation = 0; // a view's answers that arrive after the route changed are dropped
  const pageTokens = {}; // listing -> the next_token of each page seen, pages[0] = null

  const main = document.getElementById("main");
  const notice = document.getElementById("notice");

  // --- DOM: elements and text only -------------------------------------------------------------------------
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") el.className = value;
      else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
      else el.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function field(label, control, hint) {
    const id = control.id || "f-" + Math.random().toString(36).slice(2);
    control.id = id;
    return h("div", { class: "field" }, h("label", { for: id }, label), control, hint ? h("small", {}, hint) : null);
  }

  function table(caption, head, rows) {
    return h("table", {},
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows.length ? rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c))))
        : h("tr", {}, h("td", { colspan: head.length }, "None."))));
  }

  function pairs(entries) {
    return h("dl", {}, entries.filter((e) => e[1] !== undefined).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  }

  function render(title, ...nodes) {
    document.title = title + " · Batch Gateway";
    const heading = h("h1", { tabindex: "-1" }, title);
    main.replaceChildren(heading, ...nodes.flat());
    return heading;
  }

  let noticeAge = 0; // a notice outlives the one navigation that follows it (e.g. "Created job_...")

  function say(text) {
    notice.textContent = text || "";
    noticeAge = 0;
  }

  function errorBox(error) {
    const lines = (error.details || []).slice(0, 100).map((d) => {
      const where = d.row !== undefined ? "row " + d.row : d.line !== undefined ? "line " + d.line : d.field || "";
      return h("li", {}, (where ? where + ": " : "") + (d.message || JSON.stringify(d)));
    });
    return h("div", { class: "error", role: "alert" }, h("p", {}, error.text), lines.length ? h("ul", {}, lines) : null);
  }

  function money(value) {
    if (value === null || value === undefined) return "no price";
    return "$" + Number(value).toFixed(6);
  }

  function num(value) {
    return value === null || value === undefined ? "-" : Number(value).toLocaleString("en-US");
  }

  function webUrl(value) {
    // Only http(s) URLs from an answer become links (never javascript: or data:).
    try {
      const url = new URL(String(value));
      return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
    } catch (e) {
      return null;
    }
  }

  // --- the API, through the key mount -----------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, type, message, details) {
      super(message);
      this.status = status;
      this.type = type;
      this.details = details || [];
      this.text = (status ? status + " " : "") + (type ? type + ": " : "") + message;
    }
  }

  function key() {
    return sessionStorage.getItem(KEY_ITEM);
  }

  async function api(method, path, body, withKey) {
    const headers = { Authorization: "Bearer " + (withKey || key() || "") };
    const init = { method, headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    let answer;
    try {
      answer = await fetch(config.api_url + "/k" + path, init);
    } catch (e) {
      throw new ApiError(0, "network", "the API at " + config.api_url + " could not be reached (network or CORS)");
    }
    const text = await answer.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (e) {
      data = null;
    }
    if (answer.ok) return data;
    const error = (data && typeof data.error === "object" && data.error) || {};
    const message = error.message || (data && (data.message || data.Message)) || text.slice(0, 300) || answer.statusText;
    throw new ApiError(answer.status, error.type || "", String(message), Array.isArray(error.details) ? error.details : []);
  }

  function download(url) {
    // A presigned S3 URL: navigate to it (no fetch, so the results bucket needs no CORS).
    const href = webUrl(url);
    if (!href) throw new ApiError(0, "", "the answer held no download URL");
    const link = h("a", { href, download: "", rel: "noopener noreferrer", class: "hidden" });
    document.body.append(link);
    link.click();
    link.remove();
  }

  // --- routing ----------------------------------------------------------------------------------------------
  function route() {
    clearTimeout(timer);
    timer = null;
    generation += 1;
    if (++noticeAge > 1) notice.textContent = "";
    const [path, query] = (location.hash || "").replace(/^#/, "").split("?");
    const params = new URLSearchParams(query || "");
    const signedIn = Boolean(key());
    document.getElementById("nav").hidden = !signedIn;
    for (const link of document.querySelectorAll("#nav a")) {
      const current = path.startsWith(link.getAttribute("href").slice(1));
      if (current) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    if (!signedIn) return signIn();
    let m;
    if (path === "" || path === "/" || path === "/signin" || path === "/jobs") return jobs(params);
    if ((m = path.match(/^\/jobs\/([A-Za-z0-9_-]+)$/))) return job(m[1]);
    if ((m = path.match(/^\/jobs\/([A-Za-z0-9_-]+)\/results$/))) return results(m[1], params);
    if (path === "/new") return newJob();
    if (path === "/admin") return admin();
    render("Not found", h("p", {}, "No such page. "), h("a", { href: "#/jobs" }, "Jobs"));
  }

  function current(gen) {
    return gen === generation;
  }

  function focusHeading(heading) {
    if (document.activeElement === document.body || !main.contains(document.activeElement)) heading.focus();
  }

  // --- sign in ----------------------------------------------------------------------------------------------
  function signIn() {
    const input = h("input", { type: "password", id: "key", name: "key", autocomplete: "off", spellcheck: "false",
      required: true, placeholder: "bgk_...", "aria-describedby": "key-hint" });
    const out = h("div", { id: "sign-in-result" });
    const form = h("form", { id: "sign-in", novalidate: true, onsubmit: async (event) => {
      event.preventDefault();
      out.replaceChildren();
      const candidate = input.value.trim();
      if (!/^bgk_[A-Za-z0-9_-]+$/.test(candidate)) {
        out.append(errorBox(new ApiError(0, "", "a gateway key starts with bgk_")));
        return;
      }
      try {
        await api("GET", "/batches?limit=1", undefined, candidate);
      } catch (e) {
        out.append(errorBox(new ApiError(e.status, e.type, "the key was refused: " + e.message, e.details)));
        return;
      }
      sessionStorage.setItem(KEY_ITEM, candidate);
      input.value = "";
      say("Signed in.");
      if (location.hash === "#/jobs") route();
      else location.hash = "#/jobs";
    } },
    field("Gateway key", input),
    h("p", { id: "key-hint", class: "hint" },
      "Paste a key minted with POST /keys. It is kept in this tab's session storage only and sent only in the " +
      "Authorization header; closing the tab or signing out forgets it."),
    h("button", { type: "submit" }, "Sign in"));
    const heading = render("Sign in", form, out);
    input.focus();
    return heading;
  }

  function signOut() {
    sessionStorage.removeItem(KEY_ITEM);
    for (const name of Object.keys(pageTokens)) delete pageTokens[name];
    say("Signed out.");
    if (location.hash === "#/signin") route();
    else location.hash = "#/signin";
  }

  // --- jobs -------------------------------------------------------------------------------------------------
  function pager(listing, page, nextToken, go) {
    const tokens = (pageTokens[listing] = pageTokens[listing] || [null]);
    tokens[page + 1] = nextToken || undefined;
    return h("div", { class: "pager" },
      h("button", { type: "button", disabled: page === 0, onclick: () => { generation += 1; go(page - 1); } }, "Previous page"),
      h("span", {}, "Page " + (page + 1)),
      h("button", { type: "button", disabled: !nextToken, onclick: () => { generation += 1; go(page + 1); } }, "Next page"));
  }

  function done(counts) {
    counts = counts || {};
    return (counts.succeeded || 0) + (counts.errored || 0) + (counts.canceled || 0) + (counts.expired || 0);
  }

  async function jobs(params, page) {
    page = page || 0;
    const gen = generation;
    const status = STATUSES.includes(params.get("status")) ? params.get("status") : "";
    const listing = "jobs:" + status;
    const filter = h("select", { id: "status-filter", onchange: (e) => {
      location.hash = e.target.value ? "#/jobs?status=" + e.target.value : "#/jobs";
    } }, h("option", { value: "" }, "any status"), STATUSES.map((s) => h("option", { value: s, selected: s === status }, s)));
    const body = h("div", { id: "jobs-body" }, h("p", {}, "Loading…"));
    const heading = render("Jobs", h("div", { class: "toolbar" }, field("Status", filter),
      h("a", { href: "#/new", class: "button" }, "New job")), body);
    focusHeading(heading);
    const token = (pageTokens[listing] || [null])[page];
    const query = "?limit=" + JOBS_PAGE + (status ? "&status=" + status : "") +
      (token ? "&next_token=" + encodeURIComponent(token) : "");
    try {
      const data = await api("GET", "/batches" + query);
      if (!current(gen)) return;
      const rows = (data.batches || []).map((j) => [
        h("a", { href: "#/jobs/" + encodeURIComponent(j.id) }, j.id),
        h("span", { class: "status status-" + j.status }, j.status),
        j.provider + " / " + j.model,
        num(done(j.request_counts)) + " of " + num((j.request_counts || {}).total),
        money(j.cost ? j.cost.total : j.cost_usd),
        j.created_at,
      ]);
      body.replaceChildren(
        table("Jobs, newest first" + (status ? ", status " + status : ""),
          ["Job", "Status", "Provider / model", "Done", "Cost", "Created"], rows),
        pager(listing, page, data.next_token, (p) => jobs(params, p)));
    } catch (e) {
      if (current(gen)) body.replaceChildren(errorBox(e));
    }
  }

  // --- a job ------------------------------------------------------------------------------------------------
  function timeLeft(j) {
    const total = (j.request_counts || {}).total || 0;
    const finished = done(j.request_counts);
    const started = Date.parse(j.created_at);
    if (!total || !finished || finished >= total || isNaN(started)) return null;
    const seconds = ((Date.now() - started) / 1000 / finished) * (total - finished);
    return seconds < 90 ? "about " + Math.max(1, Math.round(seconds)) + " s left" : "about " + Math.round(seconds / 60) + " min left";
  }

  function countsTable(caption, counts) {
    const names = ["total", "sent", "processing", "succeeded", "errored", "canceled", "expired"];
    return table(caption, names.filter((n) => counts[n] !== undefined), [names.filter((n) => counts[n] !== undefined).map((n) => num(counts[n]))]);
  }

  function jobDetails(j) {
    const counts = j.request_counts || {};
    const total = counts.total || 0;
    const finished = done(counts);
    const cost = j.cost || {};
    const savings = cost.savings || {};
    const ended = ENDED.includes(j.status);
    const nodes = [
      pairs([
        ["Status", h("span", { class: "status status-" + j.status, id: "job-status" }, j.status)],
        ["Provider / model", j.provider + " / " + j.model + (j.endpoint ? " (" + j.endpoint + ")" : "")],
        ["Created", j.created_at],
        ["Updated", j.updated_at],
        ["Ended", j.ended_at || "not yet"],
      ]),
      h("h2", {}, "Progress"),
      h("p", {}, h("progress", { id: "job-progress", max: Math.max(total, 1), value: finished, "aria-label": "items done" }),
        " " + num(finished) + " of " + num(total) + " done" + (ended ? "" : timeLeft(j) ? ", " + timeLeft(j) + " at the rate so far" : "")),
    ];
    if (j.waiting_for_quota) {
      nodes.push(h("div", { class: "waiting", role: "status" }, h("strong", {}, "Waiting: "), j.waiting_for_quota,
        h("br"), "Estimate: it is sent when the provider's quota for the model frees up; the chunks after it wait behind it."));
    }
    if (j.error) nodes.push(h("div", { class: "error" }, h("strong", {}, "Error: "), j.error));
    nodes.push(countsTable("Request counts", counts));
    if (Array.isArray(j.chunks) && j.chunks.length) {
      nodes.push(table("Chunks", ["Chunk", "Status", "Progress", "Counts", "Attempt", "Waiting / error"],
        j.chunks.map((c) => {
          const cc = c.request_counts || {};
          const ctotal = cc.total || cc.processing + done(cc) || 0;
          return [String(c.index), c.status,
            h("progress", { max: Math.max(ctotal, 1), value: done(cc), "aria-label": "chunk " + c.index + " done" }),
            num(done(cc)) + " of " + num(ctotal) + (cc.errored ? ", " + num(cc.errored) + " errored" : ""),
            num(c.attempt), c.waiting_for_quota || c.error || ""];
        })));
    }
    nodes.push(h("h2", {}, "Cost" + (ended ? "" : " so far")));
    if (cost.total === null) nodes.push(h("p", {}, "No price: " + (cost.reason || "unknown model")));
    else {
      nodes.push(pairs([
        ["Total (batch prices)", money(cost.total !== undefined ? cost.total : j.cost_usd)],
        ["The same through the synchronous API", cost.sync_total === undefined ? undefined : money(cost.sync_total)],
        ["Saved by batch", money(savings.batch !== undefined ? savings.batch : cost.saving)],
        ["Saved by the prompt cache", savings.cache === undefined ? undefined : money(savings.cache)],
        ["Saved by reuse", savings.reuse === undefined ? undefined : money(savings.reuse)],
        ["Saved by dedup", savings.dedup === undefined ? undefined : money(savings.dedup)],
        ["Price table", cost.price_version],
      ]));
    }
    if (j.usage) {
      nodes.push(pairs(Object.entries(j.usage).map(([k, v]) => [k.replace(/_/g, " "), num(v)])));
    }
    const meta = Object.entries(j.metadata || {});
    if (meta.length) nodes.push(table("Metadata", ["Name", "Value"], meta.map(([k, v]) => [k, String(v)])));
    // the status changes and progress marks announced for the job, oldest first (decision 0139); text only
    const events = Array.isArray(j.events) ? j.events : [];
    const eventsTable = table("Events", ["Time", "Event", "Status / progress", "Event id"], events.map((e) => [
      String(e.at || ""),
      e.type === "progress" ? "progress" : e.type === "replanned" ? "replanned (decision 0142)" : "status changed",
      e.type === "progress" ? String(e.progress) + " % done (" + String(e.status) + ")"
        : e.type === "replanned" ? "items moved to another lane (" + String(e.status) + ")"
        : (e.previous_status ? String(e.previous_status) + " \u2192 " : "") + String(e.status),
      String(e.event_id || ""),
    ]));
    eventsTable.id = "job-events";
    nodes.push(eventsTable);
    return nodes;
  }

  async function job(id) {
    const gen = generation;
    const actions = h("div", { class: "toolbar", id: "job-actions" });
    const out = h("div", { id: "job-out" });
    const live = h("div", { id: "job-live", "aria-live": "off" }, h("p", {}, "Loading…"));
    const heading = render("Job " + id, actions, out, live);
    focusHeading(heading);
    let shownStatus = null;
    let reads = 0; // only the latest read paints and schedules the next (a cancel reads at once, beside the timer)

    async function cancel() {
      out.replaceChildren();
      try {
        await api("POST", "/batches/" + encodeURIComponent(id) + "/cancel");
        say("Cancel requested for " + id + ".");
      } catch (e) {
        out.replaceChildren(errorBox(e));
      }
      if (current(gen)) refresh();
    }

    async function refresh() {
      clearTimeout(timer);
      const read = ++reads;
      let j;
      try {
        j = await api("GET", "/batches/" + encodeURIComponent(id));
      } catch (e) {
        if (!current(gen) || read !== reads) return;
        live.replaceChildren(errorBox(e));
        if (e.status !== 404 && e.status !== 401 && e.status !== 403) timer = setTimeout(refresh, REFRESH_MS * 2);
        return;
      }
      if (!current(gen) || read !== reads) return;
      const ended = ENDED.includes(j.status);
      if (j.status !== shownStatus) {
        shownStatus = j.status;
        const focused = document.activeElement && document.activeElement.id;
        actions.replaceChildren(...[
          ended ? h("a", { href: "#/jobs/" + encodeURIComponent(id) + "/results", class: "button", id: "results-link" }, "Results") : null,
          ["queued", "in_progress"].includes(j.status) ? h("button", { type: "button", id: "cancel", class: "danger", onclick: cancel }, "Cancel job") : null,
          h("a", { href: "#/jobs" }, "All jobs")].filter(Boolean));
        const next = actions.querySelector("a, button");
        if (focused && document.getElementById(focused) === null && next) next.focus(); // the Cancel button went
      }
      live.replaceChildren(...jobDetails(j));
      if (!ended) timer = setTimeout(refresh, REFRESH_MS);
    }
    await refresh();
  }

  // --- results ----------------------------------------------------------------------------------------------
  function itemView(item) {
    const details = item.finish_details || {};
    const usage = item.token_usage || {};
    let body;
    if (typeof item.text === "string") body = h("div", { class: "text" }, item.text);
    else if (Array.isArray(item.outputs) && item.outputs.length) {
      body = h("div", { class: "text" }, item.outputs.map((o) =>
        o.type === "embedding" && Array.isArray(o.embedding) ? "embedding of " + o.embedding.length + " dimensions"
          : o.type === "moderation" ? "moderation: " + (o.flagged ? "flagged" : "not flagged") : JSON.stringify(o)).join("\n"));
    } else body = h("div", { class: "text empty" }, "(no text)");
    return h("article", { class: "item" },
      h("h3", {}, item.id + " ", h("span", { class: "status status-" + item.status }, item.status)),
      body,
      details.type === "error" ? h("p", { class: "error" }, (details.code || "error") + ": " + (details.message || "")) : null,
      h("p", { class: "meta" }, "tokens in " + num(usage.input_tokens) + ", out " + num(usage.output_tokens) +
        "; cost " + money(item.cost) + (item.attempt_count ? "; attempts " + item.attempt_count : "") +
        (item.reused_from ? "; reused from " + item.reused_from : "")));
  }

  async function results(id, params, page) {
    page = page || 0;
    const gen = generation;
    const listing = "results:" + id;
    const out = h("div", { id: "results-out" });
    const list = h("div", { id: "results-list" }, h("p", {}, "Loading…"));
    const jsonl = h("button", { type: "button", id: "download-jsonl", onclick: () => fetchDownload("jsonl") }, "Download JSONL");
    const tools = h("div", { class: "toolbar" }, jsonl, h("a", { href: "#/jobs/" + encodeURIComponent(id) }, "Back to the job"));
    const heading = render("Results of " + id, tools, out, list);
    focusHeading(heading);

    async function fetchDownload(format) {
      out.replaceChildren();
      try {
        const answer = await api("GET", "/batches/" + encodeURIComponent(id) + "/results?format=" + format);
        download(answer.url);
        say("Downloading the " + format.toUpperCase() + " of " + id + " (the link expires in " + answer.expires_in + " s).");
      } catch (e) {
        out.replaceChildren(errorBox(e));
      }
    }

    try {
      const j = await api("GET", "/batches/" + encodeURIComponent(id));
      if (!current(gen)) return;
      // A dataset job's table with result columns (decision 0136); any other job answers the API's 400, shown.
      tools.insertBefore(h("button", { type: "button", id: "download-csv", onclick: () => fetchDownload("csv") }, "Download CSV"), jsonl.nextSibling);
      const token = (pageTokens[listing] || [null])[page];
      const data = await api("GET", "/batches/" + encodeURIComponent(id) + "/results?limit=" + RESULTS_PAGE +
        (token ? "&next_token=" + encodeURIComponent(token) : ""));
      if (!current(gen)) return;
      const items = Object.entries(data.results || {}).map(([rid, item]) => itemView(Object.assign({ id: rid }, item)));
      list.replaceChildren(h("p", {}, "Job status " + j.status + "; " + num(items.length) + " items on this page."),
        ...(items.length ? items : [h("p", {}, "No items.")]),
        pager(listing, page, data.next_token, (p) => results(id, params, p)));
    } catch (e) {
      if (!current(gen)) return;
      if (e.status === 409) list.replaceChildren(h("p", {}, "Results are ready once the job has ended. "), errorBox(e));
      else list.replaceChildren(errorBox(e));
    }
  }

  // --- new job ----------------------------------------------------------------------------------------------
  function parseJsonl(text) {
    const requests = new Map();
    const problems = [];
    let header = null;
    let first = true;
    text.split(/\r?\n/).forEach((line, index) => {
      if (!line.trim()) return;
      const number = index + 1;
      let value;
      try {
        value = JSON.parse(line);
      } catch (e) {
        problems.push({ line: number, message: "not valid JSON" });
        return;
      }
      const isObject = value !== null && typeof value === "object" && !Array.isArray(value);
      if (first && isObject && "batch_gateway" in value) {
        header = value.batch_gateway;
        first = false;
        return;
      }
      first = false;
      if (!isObject || typeof value.id !== "string" || !("request" in value)) {
        problems.push({ line: number, message: 'a line is {"id": "...", "request": ...}' });
      } else if (requests.has(value.id)) {
        problems.push({ line: number, message: "id " + JSON.stringify(value.id) + " again" });
      } else requests.set(value.id, value.request);
    });
    if (!requests.size && !problems.length) problems.push({ line: 1, message: "the file holds no requests" });
    return { requests: Object.fromEntries(requests), header, problems };
  }

  function modelsFor(provider) {
    // config.json may carry models from the price table (the hosting build writes it): a list of ids, a list of
    // {provider, model}, or {provider: [ids]}. Without it the model field is free text.
    const models = config.models;
    if (!models) return [];
    if (Array.isArray(models)) {
      return models.filter((m) => typeof m === "string" || m.provider === provider).map((m) => (typeof m === "string" ? m : m.model));
    }
    return Array.isArray(models[provider]) ? models[provider] : [];
  }

  function estimateView(e) {
    const cost = e.cost || {};
    const plan = e.plan || {};
    return h("section", { id: "estimate", "aria-labelledby": "estimate-title" },
      h("h2", { id: "estimate-title" }, "Dry-run estimate"),
      pairs([
        ["Requests", num(e.request_count)],
        ["Chunks", num(plan.chunk_count)],
        ["Input tokens (estimate, ceiling)", num((e.input_tokens || {}).estimate) + ", " + num((e.input_tokens || {}).ceiling)],
        ["Output tokens (ceiling)", num((e.output_tokens || {}).ceiling)],
        ["Cost at batch prices", cost.low === null ? "no price: " + (cost.reason || "") : money(cost.low) + " to " + money(cost.high)],
        ["The same through the synchronous API", cost.sync_low === undefined ? undefined : money(cost.sync_low) + " to " + money(cost.sync_high)],
        ["Saving", cost.saving_low === undefined ? undefined : money(cost.saving_low) + " to " + money(cost.saving_high)],
        ["Price table", cost.price_version],
      ]));
  }

  function newJob() {
    const file = h("input", { type: "file", id: "file", accept: ".jsonl,.csv,.json,.txt,text/csv,application/json", required: true });
    const provider = h("select", { id: "provider" }, (config.providers || PROVIDERS).map((p) => h("option", { value: p }, p)));
    const models = h("datalist", { id: "models" });
    const model = h("input", { type: "text", id: "model", list: "models", required: true, autocomplete: "off", spellcheck: "false" });
    const maxTokens = h("input", { type: "number", id: "max-tokens", min: "1", step: "1", inputmode: "numeric" });
    const template = h("textarea", { id: "template", rows: "3", placeholder: "Summarise: {text}" });
    const system = h("textarea", { id: "system", rows: "2" });
    const idColumn = h("input", { type: "text", id: "id-column", placeholder: "id", autocomplete: "off" });
    const csvFields = h("fieldset", { id: "csv-fields", hidden: true },
      h("legend", {}, "CSV: one request per row"),
      field("Prompt template", template, "Column names in braces, e.g. Summarise: {text}"),
      field("System prompt (optional)", system),
      field("Id column (optional)", idColumn, "Without one, rows are numbered."));
    const estimateButton = h("button", { type: "submit", id: "estimate-button" }, "Estimate (dry run)");
    const createButton = h("button", { type: "button", id: "create-button", disabled: true }, "Create job");
    const out = h("div", { id: "new-out" });
    let body = null; // the body the shown estimate is of; changed inputs need a new estimate
    let text = null;

    function fillModels() {
      models.replaceChildren(...modelsFor(provider.value).map((m) => h("option", { value: m })));
    }

    function isCsv() {
      const f = file.files[0];
      return Boolean(f && (/\.csv$/i.test(f.name) || f.type === "text/csv"));
    }

    function invalidate() {
      body = null;
      createButton.disabled = true;
      const estimate = document.getElementById("estimate");
      if (estimate) estimate.remove();
    }

    async function build() {
      const f = file.files[0];
      if (!f) throw new ApiError(0, "", "choose a JSONL or CSV file");
      text = await f.text();
      const fields = { provider: provider.value, model: model.value.trim() };
      if (maxTokens.value) fields.hyperparameters = { max_tokens: Number(maxTokens.value) };
      if (isCsv()) {
        const dataset = { csv: text, template: template.value };
        if (system.value.trim()) dataset.system = system.value;
        if (idColumn.value.trim()) dataset.id_column = idColumn.value.trim();
        fields.dataset = dataset;
      } else {
        const parsed = parseJsonl(text);
        if (parsed.problems.length) throw new ApiError(0, "", "the file has " + parsed.problems.length + " bad line(s)", parsed.problems);
        const head = parsed.header || {};
        if (!fields.model && head.model) fields.model = head.model;
        if (head.hyperparameters && !fields.hyperparameters) fields.hyperparameters = head.hyperparameters;
        fields.requests = parsed.requests;
      }
      if (!fields.model) throw new ApiError(0, "", "choose a model", [{ field: "model", message: "required" }]);
      if (JSON.stringify(fields).length > BODY_LIMIT) {
        throw new ApiError(0, "", "the file is larger than the 3 MB a create takes from the console; submit it with " +
          "the CLI (batch-gateway submit FILE), which uploads it");
      }
      return fields;
    }

    file.addEventListener("change", () => {
      csvFields.hidden = !isCsv();
      template.required = isCsv();
      invalidate();
    });
    provider.addEventListener("change", () => { fillModels(); invalidate(); });
    for (const control of [model, maxTokens, template, system, idColumn]) control.addEventListener("input", invalidate);

    const form = h("form", { id: "new-job", novalidate: true, onsubmit: async (event) => {
      event.preventDefault();
      out.replaceChildren();
      invalidate();
      try {
        const fields = await build();
        const estimate = await api("POST", "/batches", Object.assign({}, fields, { dry_run: true }));
        body = fields;
        form.after(estimateView(estimate));
        createButton.disabled = false;
        createButton.focus();
      } catch (e) {
        out.replaceChildren(errorBox(e));
      }
    } },
    field("Input file (JSONL or CSV)", file, "JSONL: one {\"id\", \"request\"} per line, an optional {\"batch_gateway\": {...}} header first."),
    field("Provider", provider),
    field("Model", model, (config.models ? "From the price table, or type another id." : "A model id, e.g. claude-sonnet-4-20250514.")),
    models,
    field("Max tokens per request (optional)", maxTokens),
    csvFields,
    h("div", { class: "toolbar" }, estimateButton, createButton));

    createButton.addEventListener("click", async () => {
      if (!body) return;
      out.replaceChildren();
      createButton.disabled = true;
      try {
        const made = await api("POST", "/batches", body);
        say("Created " + made.id + ".");
        location.hash = "#/jobs/" + encodeURIComponent(made.id);
      } catch (e) {
        out.replaceChildren(errorBox(e));
        createButton.disabled = false;
      }
    });
    fillModels();
    const heading = render("New job", form, out);
    focusHeading(heading);
  }

  // --- admin ------------------------------------------------------------------------------------------------
  function section(id, title, load) {
    const box = h("section", { id, "aria-labelledby": id + "-title" }, h("h2", { id: id + "-title" }, title), h("p", {}, "Loading…"));
    const gen = generation;
    async function reload(extra) {
      try {
        const nodes = await load(reload);
        if (current(gen)) box.replaceChildren(box.firstChild, ...(extra ? [extra] : []), ...nodes.flat(Infinity));
      } catch (e) {
        if (!current(gen)) return;
        const why = e.status === 403 ? new ApiError(e.status, e.type, "this key may not do this (an admin key may): " + e.message) : e;
        box.replaceChildren(box.firstChild, errorBox(why));
      }
    }
    reload();
    return box;
  }

  function smallForm(id, label, controls, submit) {
    const out = h("div", { class: "form-out" });
    const form = h("form", { id, novalidate: true, onsubmit: async (event) => {
      event.preventDefault();
      out.replaceChildren();
      try {
        await submit(out);
      } catch (e) {
        out.replaceChildren(errorBox(e));
      }
    } }, controls, h("button", { type: "submit" }, label));
    return [form, out];
  }

  function keysSection() {
    return section("keys", "Gateway keys", async (reload) => {
      const data = await api("GET", "/keys");
      const rows = (data.keys || []).map((k) => [k.id, k.name || "", k.owner, k.admin ? "yes" : "no", k.created_at,
        k.revoked_at || (h("button", { type: "button", class: "danger", "aria-label": "Revoke " + k.id, onclick: async () => {
          try {
            await api("DELETE", "/keys/" + encodeURIComponent(k.id));
            say("Revoked " + k.id + ".");
            reload();
          } catch (e) {
            say("Revoke failed: " + e.text);
          }
        } }, "Revoke"))]);
      const owner = h("input", { type: "text", id: "mint-owner", required: true, autocomplete: "off", placeholder: "arn:aws:iam::123456789012:role/team" });
      const name = h("input", { type: "text", id: "mint-name", maxlength: "100", autocomplete: "off" });
      const adminFlag = h("input", { type: "checkbox", id: "mint-admin" });
      return [
        table("Keys", ["Id", "Name", "Owner", "Admin", "Created", "Revoked"], rows),
        smallForm("mint-key", "Mint key", [h("h3", {}, "Mint a key"), field("Owner (IAM user or role ARN)", owner), field("Name", name),
          h("div", { class: "field check" }, adminFlag, h("label", { for: "mint-admin" }, "Admin key (only an IAM admin may mint one)"))],
        async () => {
          const fields = { owner: owner.value.trim(), name: name.value.trim() || undefined };
          if (adminFlag.checked) fields.admin = true;
          const made = await api("POST", "/keys", fields);
          await reload(h("div", { class: "secret", role: "status" }, h("p", {}, "New key " + made.id + " (shown this once; copy it now):"),
            h("code", { id: "minted-key" }, made.key)));
        }),
      ];
    });
  }

  function budgetsSection() {
    return section("budgets", "Budgets", async (reload) => {
      const data = await api("GET", "/budgets");
      const rows = (data.budgets || []).map((b) => [b.owner, b.month, money(b.monthly_usd), money(b.spent_usd), money(b.reserved_usd),
        money(b.remaining_usd), h("button", { type: "button", class: "danger", "aria-label": "Remove the budget of " + b.owner, onclick: async () => {
          try {
            await api("DELETE", "/budgets?owner=" + encodeURIComponent(b.owner));
            reload();
          } catch (e) {
            say("Remove failed: " + e.text);
          }
        } }, "Remove")]);
      const owner = h("input", { type: "text", id: "budget-owner", required: true, autocomplete: "off" });
      const amount = h("input", { type: "number", id: "budget-usd", min: "0", step: "0.01", required: true });
      return [
        table("Budgets this month", ["Owner", "Month", "Monthly", "Spent", "Reserved", "Remaining", ""], rows),
        smallForm("set-budget", "Set budget", [h("h3", {}, "Set a monthly budget"), field("Owner (IAM ARN)", owner), field("Monthly USD", amount)],
          async () => {
            await api("POST", "/budgets", { owner: owner.value.trim(), monthly_usd: Number(amount.value) });
            reload();
          }),
      ];
    });
  }

  function webhooksSection() {
    return section("webhooks", "Webhooks", async (reload) => {
      const data = await api("GET", "/webhooks");
      const rows = (data.webhooks || []).map((w) => [w.id, w.url, (w.events || []).join(", "), w.description || "",
        h("button", { type: "button", class: "danger", "aria-label": "Delete " + w.id, onclick: async () => {
          try {
            await api("DELETE", "/webhooks/" + encodeURIComponent(w.id));
            reload();
          } catch (e) {
            say("Delete failed: " + e.text);
          }
        } }, "Delete")]);
      const url = h("input", { type: "url", id: "webhook-url", required: true, placeholder: "https://hooks.example.com/batch" });
      const description = h("input", { type: "text", id: "webhook-description", maxlength: "200" });
      const boxes = EVENTS.map((e, i) => h("div", { class: "check" },
        h("input", { type: "checkbox", id: "event-" + i, value: e, checked: e === "batch.ended" }), h("label", { for: "event-" + i }, e)));
      return [
        table("Your subscriptions", ["Id", "URL", "Events", "Description", ""], rows),
        smallForm("add-webhook", "Add webhook", [h("h3", {}, "Subscribe"), field("URL", url),
          h("fieldset", {}, h("legend", {}, "Events"), boxes), field("Description", description)],
        async () => {
          const events = boxes.map((b) => b.firstChild).filter((c) => c.checked).map((c) => c.value);
          const made = await api("POST", "/webhooks", { url: url.value.trim(), events, description: description.value || undefined });
          await reload(h("div", { class: "secret", role: "status" }, h("p", {}, "Signing secret of " + made.id + " (shown this once):"),
            h("code", {}, made.secret)));
        }),
      ];
    });
  }

  function admin() {
    const heading = render("Admin", h("p", { class: "hint" }, "Keys and budgets need an admin key; any key has its own webhooks."),
      keysSection(), budgetsSection(), webhooksSection());
    focusHeading(heading);
  }

  // --- start ------------------------------------------------------------------------------------------------
  async function start() {
    document.getElementById("sign-out").addEventListener("click", signOut);
    try {
      const answer = await fetch("config.json", { cache: "no-store" });
      config = await answer.json();
      if (!webUrl(config.api_url)) throw new Error("api_url is not an http(s) URL");
      config.api_url = config.api_url.replace(/\/+$/, "");
    } catch (e) {
      render("Console not configured", errorBox(new ApiError(0, "", "config.json could not be read: " + e.message)));
      return;
    }
    document.getElementById("version").textContent = "Batch Gateway console " + (config.version || "");
    window.addEventListener("hashchange", route);
    route();
  }

  start();
})();
