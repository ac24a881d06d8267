# Turns the XML log of a libcheck program (CK_XML_LOG_FILE_NAME) into one
# line per case: "prog:testcase:id:iteration<TAB>pass|fail|error<TAB>message".
# Usage: awk -v prog=NAME -f ck_results.awk LOG.xml
# Each <test> element has its result, id, iteration, test case and message,
# each on a line of its own.
function text(s) {
	sub(/^[^>]*>/, "", s); sub(/<\/[a-z]+>.*$/, "", s)
	gsub(/&apos;/, "\047", s); gsub(/&quot;/, "\"", s)
	gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&amp;/, "\\&", s)
	return s
}
/<test result=/ { match($0, /result="[a-z]+"/)
		  res = substr($0, RSTART + 8, RLENGTH - 9); msg = "" }
/<id>/ { id = text($0) }
/<iteration>/ { it = text($0) }
/<description>/ { tc = text($0) }
/<message>/ { msg = text($0) }
/<\/test>/ { r = res == "success" ? "pass" : res == "failure" ? "fail" : "error"
	     printf "%s:%s:%s:%s\t%s\t%s\n", prog, tc, id, it, r, msg }
