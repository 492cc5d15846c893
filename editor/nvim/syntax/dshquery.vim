" Tree buffers of the dsh-query client (editor/nvim). Highlights come from extmarks; this file
" only hides the `{{{N` / `}}}N` fold markers at the ends of lines and colours the header.
if exists("b:current_syntax")
  finish
endif
syntax match dshqueryFoldMarker / \%({{{\|}}}\)\d\+$/ conceal
syntax match dshqueryHeader /\%1l.*/
syntax match dshqueryHint /\%2l.*/
highlight default link dshqueryHeader Title
highlight default link dshqueryHint Comment
let b:current_syntax = "dshquery"
