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
	"Message": reflect.TypeFor[session.Message](),
	"Block":   reflect.TypeFor[session.Block](),
	"Usage":   reflect.TypeFor[session.Usage](),
	"Cost":    reflect.TypeFor[session.Cost](),
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

// TestTableOrderIsEncodingOrder checks a value with every member written
// comes out in the tables' order.
func TestTableOrderIsEncodingOrder(t *testing.T) {
	exit := 0
	m := &session.Message{
		Role: "r", Content: []session.Block{session.ToolCall("i", "n", nil)}, Timestamp: 1,
		API: "a", Provider: "p", Model: "m", Usage: &session.Usage{}, StopReason: "s", ErrorMessage: "e",
		ToolCallID: "t", ToolName: "n", IsError: true, Details: json.RawMessage("1"),
		Command: "c", Output: "o", ExitCode: &exit, Cancelled: true, Truncated: true, FullOutputPath: "f",
		ExcludeFromContext: true, CustomType: "c", Display: true, Summary: "s", FromID: "f", TokensBefore: 1,
	}
	out, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range tables[0].Fields {
		keys = append(keys, f.Key)
	}
	if got := topKeys(t, out); !reflect.DeepEqual(got, keys) {
		t.Fatalf("members %v, table %v", got, keys)
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
