package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
)

// maxJSONDepth bounds nesting so that a hostile file cannot exhaust the stack.
const maxJSONDepth = 200

// object is a JSON object with its key order kept: documents are read in the
// order their authors wrote them.
type object struct {
	keys   []string
	values []any
}

func (o *object) get(key string) (any, bool) {
	for i, k := range o.keys {
		if k == key {
			return o.values[i], true
		}
	}
	return nil, false
}

// parseJSON maps JSON to pages:
//   - a top-level object: a "Fields" page with its scalar fields as a
//     key/value table, then one page per object or array value, titled by its
//     key (a long array spreads over several pages of RowsPerPage items);
//   - a top-level array: pages of RowsPerPage items;
//   - a scalar: one page with one text element.
//
// Values become elements: an array of objects is a table (columns: the union
// of keys in order of appearance), an array of scalars a list, an object a
// two-column table of flattened paths ("a.b[0].c") and values, a scalar a
// text. Title, summary and keywords come from top-level "title"/"name",
// "description"/"summary" and "keywords"/"tags".
func parseJSON(name string, data []byte, opts Options) (*dpe.Document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeOrdered(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the top-level value")
	}
	doc := &dpe.Document{Title: titleFromName(name)}
	switch v := v.(type) {
	case *object:
		if t := stringField(v, "title", "name"); t != "" {
			doc.Title = t
		}
		doc.Summary = stringField(v, "description", "summary")
		for _, k := range []string{"keywords", "tags"} {
			if arr, ok := v.get(k); ok {
				if items, ok := arr.([]any); ok {
					for _, it := range items {
						if s, ok := it.(string); ok {
							doc.Keywords = append(doc.Keywords, s)
						}
					}
				}
				break
			}
		}
		// Scalar fields share a first page, as a key/value table; each
		// object or array gets a page of its own.
		fields := dpe.Table{Headers: []string{"key", "value"}, Rows: [][]string{}}
		for i, k := range v.keys {
			switch val := v.values[i].(type) {
			case *object, []any:
			default:
				fields.Rows = append(fields.Rows, []string{k, scalarString(val)})
			}
		}
		if len(fields.Rows) > 0 {
			doc.Pages = append(doc.Pages, dpe.Page{Title: "Fields", Elements: []dpe.Element{{
				Category: dpe.CategoryTable, Content: fields, Metadata: map[string]any{"path": "$"},
			}}})
		}
		for i, k := range v.keys {
			switch val := v.values[i].(type) {
			case []any:
				if len(val) > opts.RowsPerPage {
					doc.Pages = append(doc.Pages, arrayPages(k, val, opts.RowsPerPage)...)
					continue
				}
			case *object:
			default:
				continue
			}
			doc.Pages = append(doc.Pages, dpe.Page{Title: k, Elements: []dpe.Element{valueElement(v.values[i], k)}})
		}
		if doc.Summary == "" {
			doc.Summary = fmt.Sprintf("JSON object with %d keys: %s", len(v.keys), dpe.Truncate(strings.Join(v.keys, ", "), 150))
		}
	case []any:
		doc.Pages = arrayPages("", v, opts.RowsPerPage)
		doc.Summary = fmt.Sprintf("JSON array of %d items", len(v))
	default:
		doc.Pages = []dpe.Page{{Title: "Value", Elements: []dpe.Element{valueElement(v, "$")}}}
	}
	return doc, nil
}

func stringField(o *object, keys ...string) string {
	for _, k := range keys {
		if v, ok := o.get(k); ok {
			if s, ok := v.(string); ok {
				return s
			}
		}
	}
	return ""
}

func arrayPages(key string, arr []any, per int) []dpe.Page {
	var pages []dpe.Page
	for start := 0; ; start += per {
		end := min(start+per, len(arr))
		title := fmt.Sprintf("Items %d-%d", start, end-1)
		if key != "" {
			title = fmt.Sprintf("%s [%d-%d]", key, start, end-1)
		}
		if end == start {
			title = strings.TrimSpace(key + " (empty)")
		}
		el := valueElement(arr[start:end], key)
		el.Metadata = map[string]any{"path": fmt.Sprintf("%s[%d:%d]", jsonPath(key), start, end)}
		pages = append(pages, dpe.Page{Title: title, Elements: []dpe.Element{el}})
		if end == len(arr) {
			break
		}
	}
	return pages
}

func jsonPath(key string) string {
	if key == "" {
		return "$"
	}
	return "$." + key
}

func valueElement(v any, key string) dpe.Element {
	meta := map[string]any{"path": jsonPath(key)}
	switch v := v.(type) {
	case []any:
		if t, ok := objectsTable(v); ok {
			return dpe.Element{Category: dpe.CategoryTable, Content: t, Metadata: meta}
		}
		items := make([]string, 0, len(v))
		for _, it := range v {
			items = append(items, scalarString(it))
		}
		return dpe.Element{Category: dpe.CategoryList, Content: dpe.List{Items: items}, Metadata: meta}
	case *object:
		t := dpe.Table{Headers: []string{"path", "value"}, Rows: [][]string{}}
		flatten(v, "", &t.Rows)
		return dpe.Element{Category: dpe.CategoryTable, Content: t, Metadata: meta}
	default:
		return dpe.Element{Category: dpe.CategoryText, Content: dpe.Text{Text: scalarString(v)}, Metadata: meta}
	}
}

// objectsTable makes a table of an array whose items are all objects.
func objectsTable(arr []any) (dpe.Table, bool) {
	if len(arr) == 0 {
		return dpe.Table{}, false
	}
	var headers []string
	col := map[string]int{}
	for _, it := range arr {
		o, ok := it.(*object)
		if !ok {
			return dpe.Table{}, false
		}
		for _, k := range o.keys {
			if _, seen := col[k]; !seen {
				col[k] = len(headers)
				headers = append(headers, k)
			}
		}
	}
	t := dpe.Table{Headers: headers, Rows: make([][]string, 0, len(arr))}
	for _, it := range arr {
		o := it.(*object)
		row := make([]string, len(headers))
		for i, k := range o.keys {
			row[col[k]] = scalarString(o.values[i])
		}
		t.Rows = append(t.Rows, row)
	}
	return t, true
}

func flatten(v any, path string, rows *[][]string) {
	switch v := v.(type) {
	case *object:
		if len(v.keys) == 0 {
			*rows = append(*rows, []string{path, "{}"})
		}
		for i, k := range v.keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			flatten(v.values[i], p, rows)
		}
	case []any:
		if allScalars(v) {
			*rows = append(*rows, []string{path, scalarString(v)})
			return
		}
		for i, it := range v {
			flatten(it, fmt.Sprintf("%s[%d]", path, i), rows)
		}
	default:
		*rows = append(*rows, []string{path, scalarString(v)})
	}
}

func allScalars(arr []any) bool {
	for _, it := range arr {
		switch it.(type) {
		case *object, []any:
			return false
		}
	}
	return true
}

// scalarString renders a value for a table cell or list item: strings as they
// are, everything else as compact JSON.
func scalarString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return "null"
	case json.Number:
		return v.String()
	case bool:
		if v {
			return "true"
		}
		return "false"
	}
	var b strings.Builder
	writeCompact(&b, v)
	return b.String()
}

func writeCompact(b *strings.Builder, v any) {
	switch v := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			writeCompact(b, v.values[i])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, it := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCompact(b, it)
		}
		b.WriteByte(']')
	default:
		// Scalars from the decoder: strings, json.Number, bool, nil.
		vb, _ := json.Marshal(v)
		b.Write(vb)
	}
}

func decodeOrdered(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("invalid JSON: nested deeper than %d levels", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	switch tok {
	case json.Delim('{'):
		o := &object{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("invalid JSON: %w", err)
			}
			v, err := decodeOrdered(dec, depth+1)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, kt.(string))
			o.values = append(o.values, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		return o, nil
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		return arr, nil
	}
	return tok, nil
}
