package main

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// TestCodecGenerated fails when message_codec.go is not what the tables
// generate: run go generate in the module's root.
func TestCodecGenerated(t *testing.T) {
	want, err := generate(tables)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../message_codec.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("message_codec.go is out of date with internal/codecgen: run go generate in the module's root")
	}
}

// structs are the types the tables describe.
var structs = map[string]reflect.Type{
	"Message":       reflect.TypeFor[session.Message](),
	"Block":         reflect.TypeFor[session.Block](),
	"Usage":         reflect.TypeFor[session.Usage](),
	"Cost":          reflect.TypeFor[session.Cost](),
	"CacheTTL":      reflect.TypeFor[session.CacheTTL](),
	"ServerToolUse": reflect.TypeFor[session.ServerToolUse](),
}

// TestTablesMatchStructs checks that each table lists every exported
// field of its struct (but Extra) with its Go type, and nothing else, and
// that the struct has the state the generated code keeps.
func TestTablesMatchStructs(t *testing.T) {
	if len(structs) != len(tables) {
		t.Fatalf("%d tables, %d structs known to this test", len(tables), len(structs))
	}
	for _, tab := range tables {
		st := structs[tab.Name]
		if st == nil {
			t.Errorf("no struct for table %s: add it to structs in this test", tab.Name)
			continue
		}
		inTable := map[string]string{}
		for _, f := range tab.Fields {
			inTable[f.Go] = f.Type
		}
		unexported := map[string]bool{}
		for i := range st.NumField() {
			sf := st.Field(i)
			typ := strings.ReplaceAll(sf.Type.String(), "session.", "")
			switch {
			case !sf.IsExported():
				unexported[sf.Name] = true
				switch sf.Name {
				case "has":
					if typ != tab.Bits {
						t.Errorf("%s.has is %s, the table says Bits %s", tab.Name, typ, tab.Bits)
					}
				case "decoded":
					if typ != "bool" {
						t.Errorf("%s.decoded is %s", tab.Name, typ)
					}
				default:
					// Decoding leaves other state zero: canonicalize must too.
					if !regexp.MustCompile(`\b` + tab.Recv + `\.` + sf.Name + `\b`).MatchString(tab.Canon) {
						t.Errorf("%s.%s: unexported state the table's Canon does not reset", tab.Name, sf.Name)
					}
				}
			case sf.Name == "Extra":
				if typ != "Fields" {
					t.Errorf("%s.Extra is %s", tab.Name, typ)
				}
			default:
				want, ok := inTable[sf.Name]
				switch {
				case !ok:
					t.Errorf("%s.%s (%s) has no line in its table in internal/codecgen/tables.go", tab.Name, sf.Name, typ)
				case want != typ:
					t.Errorf("%s.%s is %s, its table says %s", tab.Name, sf.Name, typ, want)
				}
				delete(inTable, sf.Name)
			}
		}
		for name := range inTable {
			t.Errorf("%s's table has %s, which the struct has not", tab.Name, name)
		}
		for _, name := range []string{"has", "decoded", "Extra"} {
			if _, ok := st.FieldByName(name); !ok {
				t.Errorf("%s has no field %s", tab.Name, name)
			}
		}
	}
}

// TestTableOrderIsEncodingOrder checks that values with every member set
// come out with their members in the tables' order.
func TestTableOrderIsEncodingOrder(t *testing.T) {
	for _, tab := range tables {
		v := reflect.New(structs[tab.Name])
		fill(v.Elem())
		enc, ok := v.Interface().(json.Marshaler)
		if !ok {
			continue // Cost: written inside Usage
		}
		out, err := enc.MarshalJSON()
		if err != nil {
			t.Fatalf("%s: %v", tab.Name, err)
		}
		var keys []string
		for _, f := range tab.Fields {
			keys = append(keys, f.Key)
		}
		if got := topKeys(t, out); !reflect.DeepEqual(got, keys) {
			t.Errorf("%s members %v, table %v", tab.Name, got, keys)
		}
	}
}

// fill sets every exported field of a struct but Extra to something not
// zero.
func fill(v reflect.Value) {
	for i := range v.NumField() {
		sf, f := v.Type().Field(i), v.Field(i)
		if !sf.IsExported() || sf.Name == "Extra" {
			continue
		}
		switch {
		case f.Type() == reflect.TypeFor[json.RawMessage]():
			f.SetBytes([]byte("1"))
		case f.Type() == reflect.TypeFor[[]session.Block]():
			f.Set(reflect.ValueOf([]session.Block{session.Text("t")}))
		case f.Kind() == reflect.String:
			f.SetString("x")
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.CanInt():
			f.SetInt(1)
		case f.CanFloat():
			f.SetFloat(1)
		case f.Kind() == reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
			if f.Elem().Kind() == reflect.Struct {
				fill(f.Elem())
			}
		case f.Kind() == reflect.Struct:
			fill(f)
		default:
			panic("fill: " + f.Type().String())
		}
	}
}

func topKeys(t *testing.T, data []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestCheckRefuses checks the generator refuses tables it cannot code.
func TestCheckRefuses(t *testing.T) {
	for name, edit := range map[string]func(*Type){
		"unknown type":   func(t *Type) { t.Fields[0].Type = "uint32" },
		"key twice":      func(t *Type) { t.Fields[1].Key = t.Fields[0].Key },
		"escaped key":    func(t *Type) { t.Fields[0].Key = `a"b` },
		"raw no default": func(t *Type) { t.Fields[7].Default = "" },
		"default on str": func(t *Type) { t.Fields[0].Default = "x" },
		"size on bool":   func(t *Type) { t.Fields[4].Size = true },
		"too many bits":  func(t *Type) { t.Bits = "uint8" },
	} {
		var types []*Type
		for _, tab := range tables {
			c := *tab
			c.Fields = append([]Field(nil), tab.Fields...)
			types = append(types, &c)
		}
		edit(types[1]) // Block: type, text, thinking, thinkingSignature, redacted, id, name, arguments, ...
		if _, err := generate(types); err == nil {
			t.Errorf("%s: generated", name)
		}
	}
}
