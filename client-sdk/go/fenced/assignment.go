package fenced

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"fencelock.dev/fencelock"
)

// Assignment is one "column = value" of a guarded update: Value or Expr.
type Assignment struct {
	column string
	text   string // SQL with one {} per argument; "{}" for a plain value
	args   []any
}

// Value sets column to value (a bound parameter).
func Value(column string, value any) Assignment {
	return Assignment{column: column, text: "{}", args: []any{value}}
}

// Expr sets column to a SQL expression: Expr("balance", "balance + {}", 20) sets
// balance = balance + 20. The text is SQL: keep it a constant in your code; each {} takes the next
// argument as a bound parameter (write {}::type where PostgreSQL cannot infer its type). Quotes,
// comments, ';', '$', '%' and backslashes are refused: pass values as arguments.
func Expr(column, text string, args ...any) Assignment {
	return Assignment{column: column, text: text, args: args}
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

func checkIdentifier(name, what string) error {
	if !identifier.MatchString(name) {
		return invalid("%s %q is not an identifier of the form [A-Za-z_][A-Za-z0-9_]* (at most 63 characters)", what, name)
	}
	return nil
}

func quote(name string) string { return `"` + name + `"` }

var forbiddenInExpression = []string{";", "--", "/*", "'", `"`, "$", "%", `\`}

// render appends "column" = expression for each assignment to the SET list, numbering parameters
// from len(*params)+1.
func (t *Table) render(set []Assignment, params *[]any) (string, error) {
	if len(set) == 0 {
		return "", invalid("a guarded update needs at least one assignment")
	}
	parts := make([]string, 0, len(set))
	for _, a := range set {
		if err := checkIdentifier(a.column, "column"); err != nil {
			return "", err
		}
		if a.column == t.key || a.column == t.token {
			return "", invalid("an update may not set %q: the key and the token are the guard's", a.column)
		}
		if strings.TrimSpace(a.text) == "" {
			return "", invalid("the expression for %q is empty", a.column)
		}
		for _, bad := range forbiddenInExpression {
			if strings.Contains(a.text, bad) {
				return "", invalid("the expression for %q: quotes, comments, ';', '$', '%%' and '\\' are not allowed; pass values as arguments", a.column)
			}
		}
		pieces := strings.Split(a.text, "{}")
		if len(pieces)-1 != len(a.args) || strings.ContainsAny(strings.Join(pieces, ""), "{}") {
			return "", invalid("the expression for %q needs one {} per argument (%d given)", a.column, len(a.args))
		}
		var expression strings.Builder
		for i, piece := range pieces {
			expression.WriteString(piece)
			if i < len(a.args) {
				*params = append(*params, a.args[i])
				expression.WriteString("$" + strconv.Itoa(len(*params)))
			}
		}
		parts = append(parts, quote(a.column)+" = "+expression.String())
	}
	return strings.Join(parts, ", "), nil
}

func invalid(format string, args ...any) *fencelock.Error {
	return &fencelock.Error{Code: fencelock.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}
