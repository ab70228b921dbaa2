package dpeuri

// The 19 element categories of the DPE model (seed 004).
const (
	CategoryText       = "text"
	CategoryHeading    = "heading"
	CategoryList       = "list"
	CategoryCode       = "code"
	CategoryTable      = "table"
	CategoryPivotTable = "pivot_table"
	CategoryChart      = "chart"
	CategoryDiagram    = "diagram"
	CategoryImage      = "image"
	CategoryFormula    = "formula"
	CategoryLink       = "link"
	CategoryAnnotation = "annotation"
	CategoryHeader     = "header"
	CategoryFooter     = "footer"
	CategorySeparator  = "separator"
	CategoryAudio      = "audio"
	CategoryVideo      = "video"
	CategoryForm       = "form"
	CategoryWidget     = "widget"
)

// Categories returns the 19 element categories in the order of seed 004
// (text, tables, visualisation, data, layout, media, interaction). The slice
// is fresh on every call, so callers may keep or modify it.
func Categories() []string {
	return []string{
		CategoryText, CategoryHeading, CategoryList, CategoryCode,
		CategoryTable, CategoryPivotTable,
		CategoryChart, CategoryDiagram, CategoryImage,
		CategoryFormula, CategoryLink, CategoryAnnotation,
		CategoryHeader, CategoryFooter, CategorySeparator,
		CategoryAudio, CategoryVideo,
		CategoryForm, CategoryWidget,
	}
}

// IsCategory reports whether c is one of the 19 element categories (exact,
// case-sensitive).
func IsCategory(c string) bool {
	switch c {
	case CategoryText, CategoryHeading, CategoryList, CategoryCode,
		CategoryTable, CategoryPivotTable,
		CategoryChart, CategoryDiagram, CategoryImage,
		CategoryFormula, CategoryLink, CategoryAnnotation,
		CategoryHeader, CategoryFooter, CategorySeparator,
		CategoryAudio, CategoryVideo,
		CategoryForm, CategoryWidget:
		return true
	}
	return false
}
