NAME crew
ROWS
 N  OBJ
 G  cover_mon_early
 G  cover_mon_late
 G  cover_tue_early
 G  cover_tue_late
 G  cover_wed_early
 G  cover_wed_late
 L  max_ana 
 L  rest_ana_mon
 L  rest_ana_tue
 L  rest_ana_wed
 L  max_ben 
 L  rest_ben_mon
 L  rest_ben_tue
 L  rest_ben_wed
 L  max_chloe
 L  rest_chloe_mon
 L  rest_chloe_tue
 L  rest_chloe_wed
 L  max_dev 
 L  rest_dev_mon
 L  rest_dev_tue
 L  rest_dev_wed
COLUMNS
    MARKER    'MARKER'                 'INTORG'
    assign_ana_mon_early  OBJ       3
    assign_ana_mon_early  cover_mon_early  1
    assign_ana_mon_early  max_ana   1
    assign_ana_mon_early  rest_ana_mon  1
    assign_ana_mon_late  OBJ       3
    assign_ana_mon_late  cover_mon_late  1
    assign_ana_mon_late  max_ana   1
    assign_ana_mon_late  rest_ana_mon  1
    assign_ana_tue_early  OBJ       3
    assign_ana_tue_early  cover_tue_early  1
    assign_ana_tue_early  max_ana   1
    assign_ana_tue_early  rest_ana_tue  1
    assign_ana_tue_late  OBJ       3
    assign_ana_tue_late  cover_tue_late  1
    assign_ana_tue_late  max_ana   1
    assign_ana_tue_late  rest_ana_tue  1
    assign_ana_wed_early  OBJ       3
    assign_ana_wed_early  cover_wed_early  1
    assign_ana_wed_early  max_ana   1
    assign_ana_wed_early  rest_ana_wed  1
    assign_ana_wed_late  OBJ       3
    assign_ana_wed_late  cover_wed_late  1
    assign_ana_wed_late  max_ana   1
    assign_ana_wed_late  rest_ana_wed  1
    assign_ben_mon_early  OBJ       2.5
    assign_ben_mon_early  cover_mon_early  1
    assign_ben_mon_early  max_ben   1
    assign_ben_mon_early  rest_ben_mon  1
    assign_ben_mon_late  OBJ       2.5
    assign_ben_mon_late  cover_mon_late  1
    assign_ben_mon_late  max_ben   1
    assign_ben_mon_late  rest_ben_mon  1
    assign_ben_tue_early  OBJ       2.5
    assign_ben_tue_early  cover_tue_early  1
    assign_ben_tue_early  max_ben   1
    assign_ben_tue_early  rest_ben_tue  1
    assign_ben_tue_late  OBJ       2.5
    assign_ben_tue_late  cover_tue_late  1
    assign_ben_tue_late  max_ben   1
    assign_ben_tue_late  rest_ben_tue  1
    assign_ben_wed_early  OBJ       2.5
    assign_ben_wed_early  cover_wed_early  1
    assign_ben_wed_early  max_ben   1
    assign_ben_wed_early  rest_ben_wed  1
    assign_ben_wed_late  OBJ       2.5
    assign_ben_wed_late  cover_wed_late  1
    assign_ben_wed_late  max_ben   1
    assign_ben_wed_late  rest_ben_wed  1
    assign_chloe_mon_early  OBJ       3.5
    assign_chloe_mon_early  cover_mon_early  1
    assign_chloe_mon_early  max_chloe  1
    assign_chloe_mon_early  rest_chloe_mon  1
    assign_chloe_mon_late  OBJ       3.5
    assign_chloe_mon_late  cover_mon_late  1
    assign_chloe_mon_late  max_chloe  1
    assign_chloe_mon_late  rest_chloe_mon  1
    assign_chloe_tue_early  OBJ       3.5
    assign_chloe_tue_early  cover_tue_early  1
    assign_chloe_tue_early  max_chloe  1
    assign_chloe_tue_early  rest_chloe_tue  1
    assign_chloe_tue_late  OBJ       3.5
    assign_chloe_tue_late  cover_tue_late  1
    assign_chloe_tue_late  max_chloe  1
    assign_chloe_tue_late  rest_chloe_tue  1
    assign_chloe_wed_early  OBJ       3.5
    assign_chloe_wed_early  cover_wed_early  1
    assign_chloe_wed_early  max_chloe  1
    assign_chloe_wed_early  rest_chloe_wed  1
    assign_chloe_wed_late  OBJ       3.5
    assign_chloe_wed_late  cover_wed_late  1
    assign_chloe_wed_late  max_chloe  1
    assign_chloe_wed_late  rest_chloe_wed  1
    assign_dev_mon_early  OBJ       2
    assign_dev_mon_early  cover_mon_early  1
    assign_dev_mon_early  max_dev   1
    assign_dev_mon_early  rest_dev_mon  1
    assign_dev_mon_late  OBJ       2
    assign_dev_mon_late  cover_mon_late  1
    assign_dev_mon_late  max_dev   1
    assign_dev_mon_late  rest_dev_mon  1
    assign_dev_tue_early  OBJ       2
    assign_dev_tue_early  cover_tue_early  1
    assign_dev_tue_early  max_dev   1
    assign_dev_tue_early  rest_dev_tue  1
    assign_dev_tue_late  OBJ       2
    assign_dev_tue_late  cover_tue_late  1
    assign_dev_tue_late  max_dev   1
    assign_dev_tue_late  rest_dev_tue  1
    assign_dev_wed_early  OBJ       2
    assign_dev_wed_early  cover_wed_early  1
    assign_dev_wed_early  max_dev   1
    assign_dev_wed_early  rest_dev_wed  1
    assign_dev_wed_late  OBJ       2
    assign_dev_wed_late  cover_wed_late  1
    assign_dev_wed_late  max_dev   1
    assign_dev_wed_late  rest_dev_wed  1
    MARKER    'MARKER'                 'INTEND'
RHS
    RHS1      cover_mon_early  1
    RHS1      cover_mon_late  2
    RHS1      cover_tue_early  1
    RHS1      cover_tue_late  2
    RHS1      cover_wed_early  1
    RHS1      cover_wed_late  2
    RHS1      max_ana   3
    RHS1      rest_ana_mon  1
    RHS1      rest_ana_tue  1
    RHS1      rest_ana_wed  1
    RHS1      max_ben   3
    RHS1      rest_ben_mon  1
    RHS1      rest_ben_tue  1
    RHS1      rest_ben_wed  1
    RHS1      max_chloe  3
    RHS1      rest_chloe_mon  1
    RHS1      rest_chloe_tue  1
    RHS1      rest_chloe_wed  1
    RHS1      max_dev   3
    RHS1      rest_dev_mon  1
    RHS1      rest_dev_tue  1
    RHS1      rest_dev_wed  1
BOUNDS
 BV BND1      assign_ana_mon_early
 BV BND1      assign_ana_mon_late
 BV BND1      assign_ana_tue_early
 BV BND1      assign_ana_tue_late
 BV BND1      assign_ana_wed_early
 BV BND1      assign_ana_wed_late
 BV BND1      assign_ben_mon_early
 BV BND1      assign_ben_mon_late
 BV BND1      assign_ben_tue_early
 BV BND1      assign_ben_tue_late
 BV BND1      assign_ben_wed_early
 BV BND1      assign_ben_wed_late
 BV BND1      assign_chloe_mon_early
 BV BND1      assign_chloe_mon_late
 BV BND1      assign_chloe_tue_early
 BV BND1      assign_chloe_tue_late
 BV BND1      assign_chloe_wed_early
 BV BND1      assign_chloe_wed_late
 BV BND1      assign_dev_mon_early
 BV BND1      assign_dev_mon_late
 BV BND1      assign_dev_tue_early
 BV BND1      assign_dev_tue_late
 BV BND1      assign_dev_wed_early
 BV BND1      assign_dev_wed_late
ENDATA
