package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/go-playground/validator/v10"
)

var (
	rgbHexRE = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)
	slugRE   = regexp.MustCompile(`^[a-z0-9-]+$`)
)

// sharedValidator is built once: registration is not safe for concurrent use, validation is.
var sharedValidator = sync.OnceValue(newValidator)

// newValidator builds the one validator the package uses: field names are the YAML keys, so
// its namespaces are our field paths.
func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	must(v.RegisterValidation("rgbhex", func(fl validator.FieldLevel) bool { return rgbHexRE.MatchString(fl.Field().String()) }))
	must(v.RegisterValidation("slug", func(fl validator.FieldLevel) bool { return slugRE.MatchString(fl.Field().String()) }))
	return v
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// validatorMessages turns a validator tag into our wording. A test walks every validate tag of
// the config types and fails if one has no entry here, so authors never see validator's own text.
var validatorMessages = map[string]func(fe validator.FieldError) string{
	"oneof": func(fe validator.FieldError) string {
		return fmt.Sprintf("must be one of: %s; got %q", strings.ReplaceAll(fe.Param(), " ", ", "), fmt.Sprint(fe.Value()))
	},
	"min": func(fe validator.FieldError) string {
		if fe.Kind() == reflect.String {
			return fmt.Sprintf("must be at least %s characters long", fe.Param())
		}
		return fmt.Sprintf("must be greater than or equal to %s, got %v", fe.Param(), fe.Value())
	},
	"max": func(fe validator.FieldError) string {
		if fe.Kind() == reflect.String {
			return fmt.Sprintf("must be at most %s characters long, got %d", fe.Param(), len([]rune(fe.Value().(string))))
		}
		return fmt.Sprintf("must be less than or equal to %s, got %v", fe.Param(), fe.Value())
	},
	"gt": func(fe validator.FieldError) string {
		return fmt.Sprintf("must be greater than %s, got %v", fe.Param(), fe.Value())
	},
	"rgbhex": func(fe validator.FieldError) string {
		return fmt.Sprintf("must be a colour written #RRGGBB, got %q", fe.Value())
	},
	"slug": func(fe validator.FieldError) string {
		return fmt.Sprintf("must be lowercase letters, digits and hyphens, got %q", fe.Value())
	},
}

// validateStruct runs the validator tags over c and reports each failure at its path.
func (k *checker) validateStruct(v *validator.Validate, c *Community) {
	err := v.Struct(c)
	if err == nil {
		return
	}
	errs, ok := err.(validator.ValidationErrors)
	if !ok {
		k.add("", "internal validation error: %v", err)
		return
	}
	for _, fe := range errs {
		path := fe.Namespace()
		if _, rest, ok := strings.Cut(path, "."); ok {
			path = rest
		}
		msg := validatorMessages[fe.Tag()]
		if msg == nil {
			k.add(path, "fails the %q rule", fe.Tag())
			continue
		}
		k.add(path, "%s", msg(fe))
	}
}
