// A form generated from a tool's input JSON schema: strings, numbers,
// integers, booleans and enums get inputs of their kind; arrays, objects and
// anything else a JSON textarea.

import { el } from "./dom.js";

// kindOf reduces a property schema to one input kind.
export function kindOf(schema) {
  if (Array.isArray(schema?.enum) && schema.enum.length > 0) return "enum";
  let t = schema?.type;
  if (Array.isArray(t)) t = t.find((x) => x !== "null");
  if (["string", "number", "integer", "boolean"].includes(t)) return t;
  return "json";
}

// buildForm returns the form; on submit it calls onSubmit(values, timeout):
// values() returns the arguments object or throws an Error naming the field
// at fault, timeout is the call's deadline in seconds (undefined: the
// gateway's default).
export function buildForm(schema, onSubmit) {
  const props = schema?.properties ?? {};
  const required = new Set(schema?.required ?? []);
  const fields = [];
  const rows = Object.entries(props).map(([name, prop]) => {
    const kind = kindOf(prop);
    const id = `param-${name}`;
    const hint = [prop.description, rangeHint(prop), prop.default !== undefined ? `default ${JSON.stringify(prop.default)}` : ""]
      .filter(Boolean).join(" · ");
    let input;
    switch (kind) {
      case "enum":
        input = el("select", { id, "data-param": name },
          required.has(name) ? null : el("option", { value: "" }, "(unset)"),
          prop.enum.map((v, i) => el("option", { value: String(i) }, JSON.stringify(v).replace(/^"(.*)"$/, "$1"))));
        break;
      case "boolean":
        input = el("select", { id, "data-param": name },
          required.has(name) ? null : el("option", { value: "" }, "(unset)"),
          el("option", { value: "true" }, "true"), el("option", { value: "false" }, "false"));
        break;
      case "string":
        input = el("input", { id, type: "text", "data-param": name, required: required.has(name),
          minlength: prop.minLength, maxlength: prop.maxLength,
          placeholder: typeof prop.default === "string" ? prop.default : "" });
        break;
      case "number":
      case "integer":
        input = el("input", { id, type: "number", "data-param": name, required: required.has(name),
          step: kind === "integer" ? 1 : "any", min: prop.minimum, max: prop.maximum,
          placeholder: prop.default ?? "" });
        break;
      default:
        input = el("textarea", { id, rows: 3, "data-param": name, placeholder: jsonPlaceholder(prop) });
    }
    fields.push({ name, kind, prop, input });
    return el("div", { class: "field" },
      el("label", { for: id }, name, required.has(name) ? el("span", { class: "req", title: "required" }, " *") : null,
        el("span", { class: "kind" }, ` ${kind === "json" ? "JSON" : kind}`)),
      input,
      hint ? el("div", { class: "hint" }, hint) : null);
  });

  const values = () => {
    const out = {};
    for (const { name, kind, prop, input } of fields) {
      const raw = input.value;
      if (raw === "") {
        if (required.has(name)) throw new Error(`${name} is required`);
        continue;
      }
      switch (kind) {
        case "enum":
          out[name] = prop.enum[Number(raw)];
          break;
        case "boolean":
          out[name] = raw === "true";
          break;
        case "string":
          out[name] = raw;
          break;
        case "number":
        case "integer": {
          const n = Number(raw);
          if (!Number.isFinite(n) || (kind === "integer" && !Number.isInteger(n))) throw new Error(`${name} must be ${kind === "integer" ? "an integer" : "a number"}`);
          out[name] = n;
          break;
        }
        default:
          try {
            out[name] = JSON.parse(raw);
          } catch (e) {
            throw new Error(`${name} is not valid JSON (${e.message})`);
          }
      }
    }
    return out;
  };

  // The call's own deadline, not an argument: its id is outside the
  // param- names of the tool's fields, so a tool input named "timeout"
  // stays the tool's.
  const callTimeout = el("input", { id: "call-timeout", type: "number", min: 1, max: 3600, step: 1, placeholder: "60" });
  const form = el("form", { class: "tool-form", id: "tool-form", method: "post", novalidate: true },
    rows.length ? rows : el("p", { class: "muted" }, "This tool takes no arguments."),
    el("div", { class: "field" },
      el("label", { for: "call-timeout" }, "call timeout", el("span", { class: "kind" }, " seconds")),
      callTimeout),
    el("button", { type: "submit", id: "call-tool" }, "Call"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const t = callTimeout.value;
    onSubmit(values, t === "" ? undefined : Number(t));
  });
  return form;
}

function rangeHint(p) {
  const parts = [];
  if (p.minimum !== undefined) parts.push(`≥ ${p.minimum}`);
  if (p.maximum !== undefined) parts.push(`≤ ${p.maximum}`);
  if (p.minLength !== undefined) parts.push(`length ≥ ${p.minLength}`);
  if (p.maxLength !== undefined) parts.push(`length ≤ ${p.maxLength}`);
  return parts.join(", ");
}

function jsonPlaceholder(p) {
  if (p?.default !== undefined) return JSON.stringify(p.default);
  const t = Array.isArray(p?.type) ? p.type.find((x) => x !== "null") : p?.type;
  return t === "array" ? "[ ]" : t === "object" ? "{ }" : "JSON";
}
