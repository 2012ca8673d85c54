package configfile

import "testing"

func TestQuoteBareKeys(t *testing.T) {
	cases := map[string]string{
		`{"offsetTable":{"T@G":{0:250,1:248}}}`: `{"offsetTable":{"T@G":{"0":250,"1":248}}}`,
		"{\n\t\"t\":{0:1\n\t\t}, -3 : 4}":       "{\n\t\"t\":{\"0\":1\n\t\t}, \"-3\" : 4}",
		`{"a":[1,2,3],"s":"{0:1}","b":{"1":2}}`: `{"a":[1,2,3],"s":"{0:1}","b":{"1":2}}`,
		`{"e":"x\"{5:6}","n":{7:8}}`:            `{"e":"x\"{5:6}","n":{"7":8}}`,
	}
	for in, want := range cases {
		if got := string(QuoteBareKeys([]byte(in))); got != want {
			t.Errorf("QuoteBareKeys(%q) = %q, want %q", in, got, want)
		}
	}
}
