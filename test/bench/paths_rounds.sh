# Sourced by test/bench/paths.sh and test/bench/device.sh: the two builds
# of xshm forced to one path each, and one round of a benchmark measuring
# them beside xshm's own choice.

# paths_build TREE: this tree copied to TREE and built there as
# xshmbounce and xshmscopy, into TREE/provider-NAME/ (test/build.sh's
# xshm_build_as, which the caller has sourced).
paths_build() {
	local tree=$1
	rm -rf "$tree"
	mkdir -p "$tree"
	tar -cf - --exclude=./build --exclude=./bench-results --exclude=./.git \
		--exclude=./device . | tar -xf - -C "$tree"
	xshm_build_as "$tree" xshmbounce
	xshm_build_as "$tree" xshmscopy
}

# xshmbounce: bounce buffers only; xshmscopy: the single copy above 8 KiB.
paths_force() {
	local never=1099511627776	# bytes: no message is this large
	export FI_XSHMBOUNCE_PATH=static FI_XSHMBOUNCE_SCOPY_THRESHOLD=$never \
		FI_XSHMBOUNCE_SCOPY_HUGE_MIN=$never \
		FI_XSHMBOUNCE_SCOPY_HUGE_STREAM_MIN=$never
	export FI_XSHMSCOPY_PATH=static FI_XSHMSCOPY_SCOPY_THRESHOLD=8192
}

# paths_round PROGRAM BENCH REP SIZES [-W]: a fresh process measuring the
# three builds alternately, their order rotated by REP; prints the raw
# lines paths.py reads (BENCH REP PROVIDER SIZE ...).
paths_round() {
	local program=$1 bench=$2 rep=$3 sizes=$4 written=${5:-} provs
	case $((rep % 3)) in
	0) provs=xshm,xshmbounce,xshmscopy ;;
	1) provs=xshmbounce,xshmscopy,xshm ;;
	2) provs=xshmscopy,xshm,xshmbounce ;;
	esac
	timeout 300 "$program" -p "$provs" -s "$sizes" -b $written |
		grep -v '^#' | sed "s/^/$bench $rep /"
}
