;; alfworld-mini: examine-book (bedroom)
;; Pick up the book from the bed and switch on the desk lamp on the side table while holding it.
;; Display names: Bed_bar_1 = bed 1, Desk_bar_1 = desk 1, Drawer_bar_2 = drawer 1, Drawer_bar_1 = drawer 2, Dresser_bar_1 = dresser 1, GarbageCan_bar_1 = garbagecan 1, LaundryHamper_bar_1 = laundryhamper 1, Shelf_bar_1 = shelf 1, SideTable_bar_2 = sidetable 1, SideTable_bar_1 = sidetable 2
;;                Book_bar_1 = book 1, DeskLamp_bar_1 = desklamp 1, Laptop_bar_1 = laptop 1, Pillow_bar_1 = pillow 1, CellPhone_bar_1 = cellphone 1, AlarmClock_bar_1 = alarmclock 1, Pen_bar_1 = pen 1, CD_bar_1 = cd 1, Newspaper_bar_1 = newspaper 1
(define (problem examine_book)
    (:domain alfred)
    (:objects
        agent1 - agent
        AlarmClockType - otype
        BookType - otype
        ButterKnifeType - otype
        CDType - otype
        CellPhoneType - otype
        DeskLampType - otype
        KnifeType - otype
        LaptopType - otype
        NewspaperType - otype
        PenType - otype
        PillowType - otype
        BedType - rtype
        DeskType - rtype
        DrawerType - rtype
        DresserType - rtype
        FridgeType - rtype
        GarbageCanType - rtype
        LaundryHamperType - rtype
        MicrowaveType - rtype
        ShelfType - rtype
        SideTableType - rtype
        SinkBasinType - rtype
        Book_bar_1 - object
        DeskLamp_bar_1 - object
        Laptop_bar_1 - object
        Pillow_bar_1 - object
        CellPhone_bar_1 - object
        AlarmClock_bar_1 - object
        Pen_bar_1 - object
        CD_bar_1 - object
        Newspaper_bar_1 - object
        Bed_bar_1 - receptacle
        Desk_bar_1 - receptacle
        Drawer_bar_2 - receptacle
        Drawer_bar_1 - receptacle
        Dresser_bar_1 - receptacle
        GarbageCan_bar_1 - receptacle
        LaundryHamper_bar_1 - receptacle
        Shelf_bar_1 - receptacle
        SideTable_bar_2 - receptacle
        SideTable_bar_1 - receptacle
        loc_bar_0 - location
        loc_bar_1 - location
        loc_bar_2 - location
        loc_bar_3 - location
        loc_bar_4 - location
        loc_bar_5 - location
        loc_bar_6 - location
        loc_bar_7 - location
        loc_bar_8 - location
        loc_bar_9 - location
        loc_bar_10 - location
    )
    (:init
        (atLocation agent1 loc_bar_0)
        (receptacleType Bed_bar_1 BedType)
        (receptacleAtLocation Bed_bar_1 loc_bar_1)
        (receptacleType Desk_bar_1 DeskType)
        (receptacleAtLocation Desk_bar_1 loc_bar_2)
        (receptacleType Drawer_bar_2 DrawerType)
        (receptacleAtLocation Drawer_bar_2 loc_bar_3)
        (openable Drawer_bar_2)
        (receptacleType Drawer_bar_1 DrawerType)
        (receptacleAtLocation Drawer_bar_1 loc_bar_4)
        (openable Drawer_bar_1)
        (receptacleType Dresser_bar_1 DresserType)
        (receptacleAtLocation Dresser_bar_1 loc_bar_5)
        (receptacleType GarbageCan_bar_1 GarbageCanType)
        (receptacleAtLocation GarbageCan_bar_1 loc_bar_6)
        (receptacleType LaundryHamper_bar_1 LaundryHamperType)
        (receptacleAtLocation LaundryHamper_bar_1 loc_bar_7)
        (receptacleType Shelf_bar_1 ShelfType)
        (receptacleAtLocation Shelf_bar_1 loc_bar_8)
        (receptacleType SideTable_bar_2 SideTableType)
        (receptacleAtLocation SideTable_bar_2 loc_bar_9)
        (receptacleType SideTable_bar_1 SideTableType)
        (receptacleAtLocation SideTable_bar_1 loc_bar_10)
        (objectType Book_bar_1 BookType)
        (inReceptacle Book_bar_1 Bed_bar_1)
        (objectAtLocation Book_bar_1 loc_bar_1)
        (pickupable Book_bar_1)
        (objectType DeskLamp_bar_1 DeskLampType)
        (inReceptacle DeskLamp_bar_1 SideTable_bar_1)
        (objectAtLocation DeskLamp_bar_1 loc_bar_10)
        (toggleable DeskLamp_bar_1)
        (objectType Laptop_bar_1 LaptopType)
        (inReceptacle Laptop_bar_1 Bed_bar_1)
        (objectAtLocation Laptop_bar_1 loc_bar_1)
        (pickupable Laptop_bar_1)
        (objectType Pillow_bar_1 PillowType)
        (inReceptacle Pillow_bar_1 Bed_bar_1)
        (objectAtLocation Pillow_bar_1 loc_bar_1)
        (pickupable Pillow_bar_1)
        (objectType CellPhone_bar_1 CellPhoneType)
        (inReceptacle CellPhone_bar_1 Desk_bar_1)
        (objectAtLocation CellPhone_bar_1 loc_bar_2)
        (pickupable CellPhone_bar_1)
        (objectType AlarmClock_bar_1 AlarmClockType)
        (inReceptacle AlarmClock_bar_1 SideTable_bar_2)
        (objectAtLocation AlarmClock_bar_1 loc_bar_9)
        (pickupable AlarmClock_bar_1)
        (objectType Pen_bar_1 PenType)
        (inReceptacle Pen_bar_1 Drawer_bar_2)
        (objectAtLocation Pen_bar_1 loc_bar_3)
        (pickupable Pen_bar_1)
        (objectType CD_bar_1 CDType)
        (inReceptacle CD_bar_1 Shelf_bar_1)
        (objectAtLocation CD_bar_1 loc_bar_8)
        (pickupable CD_bar_1)
        (objectType Newspaper_bar_1 NewspaperType)
        (inReceptacle Newspaper_bar_1 Dresser_bar_1)
        (objectAtLocation Newspaper_bar_1 loc_bar_5)
        (pickupable Newspaper_bar_1)
        (canContain BedType BookType)
        (canContain BedType CellPhoneType)
        (canContain BedType LaptopType)
        (canContain BedType NewspaperType)
        (canContain BedType PillowType)
        (canContain DeskType AlarmClockType)
        (canContain DeskType BookType)
        (canContain DeskType CDType)
        (canContain DeskType CellPhoneType)
        (canContain DeskType LaptopType)
        (canContain DeskType NewspaperType)
        (canContain DeskType PenType)
        (canContain DrawerType BookType)
        (canContain DrawerType CDType)
        (canContain DrawerType CellPhoneType)
        (canContain DrawerType NewspaperType)
        (canContain DrawerType PenType)
        (canContain DresserType AlarmClockType)
        (canContain DresserType BookType)
        (canContain DresserType CDType)
        (canContain DresserType CellPhoneType)
        (canContain DresserType LaptopType)
        (canContain DresserType NewspaperType)
        (canContain DresserType PenType)
        (canContain GarbageCanType CDType)
        (canContain GarbageCanType NewspaperType)
        (canContain GarbageCanType PenType)
        (canContain ShelfType AlarmClockType)
        (canContain ShelfType BookType)
        (canContain ShelfType CDType)
        (canContain ShelfType CellPhoneType)
        (canContain ShelfType NewspaperType)
        (canContain ShelfType PenType)
        (canContain SideTableType AlarmClockType)
        (canContain SideTableType BookType)
        (canContain SideTableType CDType)
        (canContain SideTableType CellPhoneType)
        (canContain SideTableType LaptopType)
        (canContain SideTableType NewspaperType)
        (canContain SideTableType PenType)
    )
    (:goal
        (and
            (exists (?t - object ?r - receptacle ?a - agent ?l - location)
                (and
                    (objectType ?t DeskLampType)
                    (toggleable ?t)
                    (isToggled ?t)
                    (inReceptacle ?t ?r)
                    (receptacleAtLocation ?r ?l)
                    (atLocation ?a ?l)
                )
            )
            (exists (?o - object ?a - agent)
                (and
                    (objectType ?o BookType)
                    (holds ?a ?o)
                )
            )
        )
    )
)
