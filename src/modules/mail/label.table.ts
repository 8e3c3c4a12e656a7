/** A label the workspace defined: its colour. A label on messages needs no definition (it shows in the default colour). */
export interface LabelDefinitionTable {
  workspace_id: string;
  /** The label as messages carry it (1–64 of a-z 0-9 _ . : -). */
  name: string;
  /** `#rrggbb`, lower case. */
  colour: string;
  created_at: number;
  updated_at: number;
}
